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

// aptRetry runs an apt command that needs the package lists (cmd makes
// it afresh each time); when it fails or says nothing (a fresh machine or
// container has empty lists), it updates the lists once and tries again.
func aptRetry(what string, cmd func() *exec.Cmd) ([]byte, error) {
	out, err := cmd().CombinedOutput()
	if err == nil && len(bytes.TrimSpace(out)) > 0 {
		return out, nil
	}
	if up, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
		return nil, fmt.Errorf("%s: %s; apt-get update: %s", what, firstLine(out, err), firstLine(up, uerr))
	}
	if out, err = cmd().CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %s", what, firstLine(out, err))
	}
	return out, nil
}

var dependsRE = regexp.MustCompile(`(?m)^\s*Depends:\s*(linux-image-\S+)`)

// resolveKernelPackage names the versioned package behind Debian's
// linux-image-amd64 meta-package (linux-image-6.1.0-57-amd64 today):
// exact versions rotate out of the archive, the meta-package stays.
func resolveKernelPackage() (string, error) {
	out, err := aptRetry("apt-cache depends linux-image-amd64", func() *exec.Cmd {
		return exec.Command("apt-cache", "depends", "linux-image-amd64")
	})
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
	if _, err := aptRetry("apt-get download "+strings.Join(pkgs, " "), func() *exec.Cmd {
		cmd := exec.Command("apt-get", append([]string{"download", "-q"}, pkgs...)...)
		cmd.Dir = dir
		return cmd
	}); err != nil {
		return "", err
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
