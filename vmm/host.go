package vmm

import (
	"os"
	"strings"
)

// HostEmulates reports whether this host's KVM runs guests without
// hardware virtualization (no vmx/svm in the host CPU flags, e.g. the
// kvm_pvm module of docs/hosts.md): guest kernel code is then interpreted and
// Linux user space cannot run (SYSCALL from CPL3 is broken there).
func HostEmulates() bool {
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return true
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "flags") {
			f := " " + line + " "
			return !strings.Contains(f, " vmx ") && !strings.Contains(f, " svm ")
		}
	}
	return false
}
