package kvm

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"golang.org/x/sys/unix"
)

// The reasons /dev/kvm is missing, as sysfs shows them, each with its way
// out (the PVM guest is the machine docs/hosts.md measured).
func TestNoKVMHint(t *testing.T) {
	dir := &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	for _, c := range []struct {
		name string
		sys  fstest.MapFS
		err  error
		want string
	}{
		{"no KVM at all", fstest.MapFS{"module/tun": dir}, unix.ENOENT, "this kernel has no KVM"},
		{"PVM guest", fstest.MapFS{"module/kvm": dir, "module/kvm_pvm": dir}, unix.ENOENT,
			"registered no device: kvm_pvm is loaded but did not bind"},
		{"no vendor module", fstest.MapFS{"module/kvm": dir}, unix.ENODEV, "no vendor module (kvm_intel, kvm_amd) is loaded"},
		{"node missing", fstest.MapFS{"module/kvm": dir, "class/misc/kvm/dev": {Data: []byte("10:232\n")}}, unix.ENOENT,
			"mknod /dev/kvm c 10 232"},
		{"permission", fstest.MapFS{}, unix.EACCES, "run as root"},
		{"other errno", fstest.MapFS{"module/kvm": dir}, unix.EMFILE, ""},
	} {
		got := noKVMHint(c.sys, c.err)
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: hint %q, want one with %q", c.name, got, c.want)
		}
	}
}
