package nested

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// aptQuery runs an apt command that reads the package lists; when the
// lists are empty (a fresh machine or container), it updates them once
// and tries again.
func aptQuery(name string, args ...string) ([]byte, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err == nil && len(bytes.TrimSpace(out)) > 0 {
		return out, nil
	}
	if up, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
		return nil, fmt.Errorf("apt-get update failed: %s", firstLine(up, uerr))
	}
	out, err = exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), firstLine(out, err))
	}
	return out, nil
}

var dependsRE = regexp.MustCompile(`(?m)^\s*Depends:\s*(linux-image-\S+)`)

// resolveKernelPackage names the versioned package behind Debian's
// linux-image-amd64 meta-package (linux-image-6.1.0-57-amd64 today):
// exact versions rotate out of the archive, the meta-package stays.
func resolveKernelPackage() (string, error) {
	out, err := aptQuery("apt-cache", "depends", "linux-image-amd64")
	if err != nil {
		return "", fmt.Errorf("cannot resolve Debian's linux-image-amd64: %w", err)
	}
	m := dependsRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("cannot resolve Debian's linux-image-amd64: apt-cache names no linux-image dependency")
	}
	return string(m[1]), nil
}

// downloadExtract fetches the Debian packages with apt-get download (no
// installation: nothing goes into /boot or the package database) into
// dir and unpacks each into dir/root.
func downloadExtract(dir string, pkgs ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// apt-get download writes to its working directory, as _apt where it
	// can: let it write here.
	os.Chmod(dir, 0o777)
	download := func() ([]byte, error) {
		cmd := exec.Command("apt-get", append([]string{"download", "-q"}, pkgs...)...)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	if out, err := download(); err != nil {
		if up, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get download %s: %s; apt-get update: %s", strings.Join(pkgs, " "), firstLine(out, err), firstLine(up, uerr))
		}
		if out, err := download(); err != nil {
			return "", fmt.Errorf("apt-get download %s: %s", strings.Join(pkgs, " "), firstLine(out, err))
		}
	}
	root := filepath.Join(dir, "root")
	for _, p := range pkgs {
		debs, _ := filepath.Glob(filepath.Join(dir, p+"_*.deb"))
		if len(debs) == 0 {
			return "", fmt.Errorf("apt-get download left no %s_*.deb in %s", p, dir)
		}
		if out, err := exec.Command("dpkg-deb", "-x", debs[len(debs)-1], root).CombinedOutput(); err != nil {
			return "", fmt.Errorf("dpkg-deb -x %s: %s", debs[len(debs)-1], firstLine(out, err))
		}
	}
	return root, nil
}

// firstLine is the first non-empty line of a command's output, or its
// error: what a one-line error shows of a failed command.
func firstLine(out []byte, err error) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "W:") {
			return l
		}
	}
	return err.Error()
}
