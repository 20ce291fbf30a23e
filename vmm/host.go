package vmm

import (
	"sync"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/pvsyscall"
	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vlapic"
)

// claimedMSRs are the MSRs govmm's MSR filter claims (setupKVM), which the
// host probe checks reach govmm.
var claimedMSRs = []hostprobe.Claimed{
	{Name: "APIC_BASE", Index: vlapic.MSRAPICBase},
	{Name: "PV_SEND_IPI", Index: pvipi.MSRSendIPI},
	{Name: "KVM_PV_EOI", Index: vcpu.MSRPVEOI},
	{Name: "SYSCALL_ENTRY", Index: pvsyscall.MSRSyscallEntry},
}

// Host is what the probe VMs of package hostprobe measured on /dev/kvm,
// once per process; err says why they could not run.
var Host = sync.OnceValues(func() (hostprobe.Answers, error) {
	return hostprobe.Probe("/dev/kvm", claimedMSRs)
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
