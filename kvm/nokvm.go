package kvm

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// noKVMHint says why /dev/kvm could not be opened, from the open's error
// and what sysfs shows (sys is /sys, or a fake in tests): the one-line
// error a user gets then names the cause and the way out, not only the
// errno. "" when sysfs says nothing useful.
func noKVMHint(sys fs.FS, err error) string {
	exists := func(name string) bool { _, e := fs.Stat(sys, name); return e == nil }
	switch {
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		return "no permission: run as root or as a member of /dev/kvm's group (kvm)"
	case !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENXIO):
		return ""
	case exists("class/misc/kvm"):
		dev := "10:232"
		if b, e := fs.ReadFile(sys, "class/misc/kvm/dev"); e == nil {
			dev = strings.TrimSpace(string(b))
		}
		maj, min, _ := strings.Cut(dev, ":")
		return "the kernel has the device (" + dev + ") but there is no node for it: mknod /dev/kvm c " + maj + " " + min
	case exists("module/kvm"):
		vendor := "no vendor module (kvm_intel, kvm_amd) is loaded"
		for _, m := range []string{"kvm_intel", "kvm_amd", "kvm_pvm"} {
			if exists("module/" + m) {
				vendor = m + " is loaded but did not bind"
			}
		}
		return "the kvm module is loaded but registered no device: " + vendor +
			"; the CPU or firmware has no virtualization, or this kernel is itself a guest that cannot nest (a PVM guest: docs/hosts.md)"
	default:
		return "this kernel has no KVM: load kvm_intel or kvm_amd, on a CPU with virtualization enabled"
	}
}

// sysfs is /sys for noKVMHint.
var sysfs = os.DirFS("/sys")
