package nested

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadOrder: each module comes after what it depends on, once, and a
// missing dependency is an error naming who needs it.
func TestLoadOrder(t *testing.T) {
	idx := moduleIndex{"kvm_amd": "/m/kvm-amd.ko", "kvm": "/m/kvm.ko", "irqbypass": "/m/irqbypass.ko", "ccp": "/m/ccp.ko", "9p": "/m/9p.ko", "9pnet": "/m/9pnet.ko"}
	deps := map[string][]string{"/m/kvm-amd.ko": {"kvm", "ccp"}, "/m/kvm.ko": {"irqbypass"}, "/m/9p.ko": {"9pnet"}}
	dep := func(p string) ([]string, error) { return deps[p], nil }
	got, err := idx.loadOrder([]string{"kvm-amd", "9p", "kvm"}, dep)
	want := []string{"/m/irqbypass.ko", "/m/kvm.ko", "/m/ccp.ko", "/m/kvm-amd.ko", "/m/9pnet.ko", "/m/9p.ko"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("order %v, %v; want %v", got, err, want)
	}
	deps["/m/9p.ko"] = []string{"netfs"}
	if _, err := idx.loadOrder([]string{"9p"}, dep); err == nil || !strings.Contains(err.Error(), "netfs (needed by 9p)") {
		t.Errorf("missing dependency: %v", err)
	}
	deps["/m/kvm.ko"] = []string{"kvm_amd"}
	if _, err := idx.loadOrder([]string{"kvm_amd"}, dep); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

func TestParseDepends(t *testing.T) {
	info := []byte("license=GPL\x00depends=kvm,ccp\x00retpoline=Y\x00")
	if got := parseDepends(info); !slices.Equal(got, []string{"kvm", "ccp"}) {
		t.Errorf("depends %v", got)
	}
	if got := parseDepends([]byte("depends=\x00")); got != nil {
		t.Errorf("no depends: %v", got)
	}
}

// TestCPIO: the archive the runner writes is one cpio(1) reads back, with
// its directories, files, modes and symbolic links. cpio is one of the
// Makefile's TEST_DEBS: without it the test fails (it does not skip).
func TestCPIO(t *testing.T) {
	cpioBin, err := exec.LookPath("cpio")
	if err != nil {
		t.Fatalf("cpio(1) is missing, so the archive cannot be read back: install Debian's cpio (make test-deps does): %v", err)
	}
	var b bytes.Buffer
	w := newCPIO(&b)
	w.file("bin/busybox", 0o755, []byte("ELF"))
	w.symlink("bin/sh", "busybox")
	w.file("etc/a/b/c.conf", 0o644, []byte("x=1\n"))
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(cpioBin, "-idm", "--quiet")
	cmd.Dir, cmd.Stdin = dir, &b
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v: %s", err, out)
	}
	out, _ := exec.Command("ls", "-lR", dir).Output()
	for _, want := range []string{"-rwxr-xr-x", "busybox", "sh -> busybox", "c.conf"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("extracted tree lacks %q:\n%s", want, out)
		}
	}
	if got, _ := exec.Command("cat", filepath.Join(dir, "etc/a/b/c.conf")).Output(); string(got) != "x=1\n" {
		t.Errorf("c.conf = %q", got)
	}
}

// TestScript: the command, its directory and environment are quoted for
// /bin/sh whatever they hold; names sh cannot export are left out.
func TestScript(t *testing.T) {
	r := &run{opt: Options{Dir: "/a b", Command: []string{"echo", "it's", "$HOME"}, Env: []string{"A=x'y", "PWD=/z", "BAD-NAME=1", "B="}}}
	s := r.script()
	for _, want := range []string{"cd '/a b' || exit 125\n", "export A='x'\\''y'\n", "export B=''\n", "exec 'echo' 'it'\\''s' '$HOME'\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"PWD", "BAD-NAME"} {
		if strings.Contains(s, bad) {
			t.Errorf("script exports %s:\n%s", bad, s)
		}
	}
}

// TestFollow: the command's output is passed on, L1's own lines are not,
// the marker ends it with the status or the error /init reported, and L1
// stopping early is an error that quotes its last line.
func TestFollow(t *testing.T) {
	r := &run{nonce: "n1", opt: Options{Host: AMD}}
	var out, errs bytes.Buffer
	r.opt.Stdout, r.opt.Stderr = &out, &errs
	st, err := r.follow(strings.NewReader("boot noise\r\n@@n1 start\r\nhello\r\npartial@@n1 status 7\r\n"))
	if err != nil || st != 7 || out.String() != "hello\npartial\n" {
		t.Errorf("status %d, %v, output %q", st, err, out.String())
	}
	_, err = r.follow(strings.NewReader("@@n1 error insmod kvm_amd refused: kvm: no hardware support\n"))
	if err == nil || !strings.Contains(err.Error(), "no hardware support") {
		t.Errorf("init's error: %v", err)
	}
	_, err = r.follow(strings.NewReader("Kernel panic - not syncing: VFS\n"))
	if err == nil || !strings.Contains(err.Error(), "Kernel panic") {
		t.Errorf("early stop: %v", err)
	}
}

// TestEmulatorMissing: without QEMU or Bochs on PATH the error is one line
// naming the Debian package to install.
func TestEmulatorMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for h, want := range map[Host]string{AMD: "qemu-system-x86_64 not found: install Debian's qemu-system-x86", Intel: "bochs not found: install Debian's bochs"} {
		_, err := emulatorFor(h)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", h, err, want)
		}
	}
}

// TestLockBuild: a second build waits for the first's lock.
func TestLockBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "image.lock")
	unlock, err := lockBuild(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	go func() {
		u, err := lockBuild(path)
		if err == nil {
			u()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("the second lock was taken while the first was held")
	case <-time.After(100 * time.Millisecond):
	}
	unlock()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the second lock was not taken after the first was released")
	}
}
