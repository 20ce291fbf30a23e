package vmm

import (
	"sync"

	"github.com/govmm/govmm/hostprobe"
)

// Host is what the probe VMs of package hostprobe measured on /dev/kvm,
// once per process; err says why they could not run.
var Host = sync.OnceValues(func() (hostprobe.Answers, error) {
	return hostprobe.Probe("/dev/kvm", claimedMSRs())
})

// HostEmulates reports whether this host's KVM interprets guest kernel
// code (kvm_pvm of docs/hosts.md) instead of running it with VT-x or
// AMD-V, as measured by hostprobe: Linux user space then needs the SYSCALL
// doorbell, and kernel-mode gaps are completed by govmm. False where
// /dev/kvm cannot be probed.
func HostEmulates() bool {
	a, err := Host()
	return err == nil && a.Emulates
}
