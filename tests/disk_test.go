package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// testDisk is a raw disk image for virtio-blk tests: an ext2 filesystem of
// fsMiB at the start (written by mke2fs -d from files), and after it, to
// the image's end, a scratch area a guest benchmark may overwrite.
type testDisk struct {
	path           string
	fsMiB, sizeMiB int
}

// scratch is the scratch area: its offset and length in bytes.
func (d testDisk) scratch() (off, n int64) {
	return int64(d.fsMiB) << 20, int64(d.sizeMiB-d.fsMiB) << 20
}

// makeDisk builds a testDisk in the test's temporary directory. It needs
// e2fsprogs (make test-deps installs it).
func makeDisk(t *testing.T, files map[string]string, fsMiB, sizeMiB int) testDisk {
	t.Helper()
	mke2fs := e2fsTool(t, "mke2fs")
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := testDisk{path: filepath.Join(dir, "disk.img"), fsMiB: fsMiB, sizeMiB: sizeMiB}
	if err := os.WriteFile(d.path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(d.path, int64(sizeMiB)<<20); err != nil {
		t.Fatal(err)
	}
	// -F: a regular file; -q: quiet; the size argument leaves the rest of
	// the file outside the filesystem.
	out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext2", "-b", "1024", "-d", root, d.path, strconv.Itoa(fsMiB)+"M").CombinedOutput()
	if err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	return d
}

// readDiskFile reads /name from the image's filesystem with debugfs.
func readDiskFile(t *testing.T, d testDisk, name string) (string, bool) {
	t.Helper()
	out, err := exec.Command(e2fsTool(t, "debugfs"), "-R", "cat /"+name, d.path).Output()
	if err != nil {
		t.Fatalf("debugfs cat /%s: %v", name, err)
	}
	// debugfs prints nothing for a missing file (its error goes to stderr).
	if len(out) == 0 {
		return "", false
	}
	return string(out), true
}

// e2fsTool finds an e2fsprogs program (in /sbin, which may not be on PATH).
func e2fsTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not found: install e2fsprogs (make test-deps)", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestDiskImage: the helpers make an image whose file reads back, with
// the scratch area after the filesystem.
func TestDiskImage(t *testing.T) {
	d := makeDisk(t, map[string]string{"host.txt": "written by the host\n"}, 8, 12)
	if got, ok := readDiskFile(t, d, "host.txt"); !ok || got != "written by the host\n" {
		t.Errorf("host.txt reads back %q (found %v)", got, ok)
	}
	if _, ok := readDiskFile(t, d, "absent.txt"); ok {
		t.Error("a file never written reads back")
	}
	if off, n := d.scratch(); off != 8<<20 || n != 4<<20 {
		t.Errorf("scratch area %d+%d, want 8 MiB + 4 MiB", off, n)
	}
}
