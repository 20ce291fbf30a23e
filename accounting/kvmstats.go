// This file holds what a measured section records of KVM's own per-vCPU
// statistics (KVM_GET_STATS_FD) when the LAPIC is KVM's (--lapic=kvm):
// the exits KVM serves itself (APIC accesses, HLT, interrupt windows)
// never reach govmm's counters, so KVM's are the section's count.

package accounting

// KVMStat is one of KVM's per-vCPU statistics a section records.
type KVMStat int

// The statistics, as KVM names them (kvm_vcpu_stat in arch/x86 and
// kvm_vcpu_stat_generic).
const (
	KVMExits              KVMStat = iota // every VM exit, those that reach govmm included
	KVMIRQExits                          // exits for the host's own interrupts (not the guest's doing)
	KVMHaltExits                         // HLT exits
	KVMHaltWakeup                        // wake-ups from a halt's block
	KVMHaltAttemptedPoll                 // halts that polled
	KVMHaltSuccessfulPoll                // halts whose poll saw the wake-up
	KVMIRQInjections                     // interrupts KVM injected
	KVMNMIInjections                     // NMIs KVM injected
	KVMIRQWindowExits                    // interrupt-window exits
	KVMSignalExits                       // KVM_RUN ended by a signal (govmm's kick)
	KVMIOExits                           // port I/O exits
	KVMMMIOExits                         // MMIO exits KVM sent to user space
	KVMHypercalls                        // hypercalls KVM served (KVM's PV send-IPI: one per send)
	NumKVMStats
)

var kvmStatNames = [NumKVMStats]string{"exits", "irq_exits", "halt_exits", "halt_wakeup", "halt_attempted_poll", "halt_successful_poll", "irq_injections",
	"nmi_injections", "irq_window_exits", "signal_exits", "io_exits", "mmio_exits", "hypercalls"}

// String is the statistic's name in KVM's binary stats.
func (s KVMStat) String() string { return kvmStatNames[s] }

// KVMStatNames lists the statistics' names in KVMStat order.
func KVMStatNames() []string { return kvmStatNames[:] }

// KVMCounts are one vCPU's KVM statistics, by KVMStat.
type KVMCounts [NumKVMStats]uint64

// Sub returns c - o, each statistic on its own.
func (c KVMCounts) Sub(o KVMCounts) KVMCounts {
	for i := range c {
		c[i] -= o[i]
	}
	return c
}

// GuestExits is the exits the guest made: all of KVM's but those for the
// host's own interrupts (irq_exits), which land wherever the host's timer
// and IPIs fall. In the nested hosts that is exact: a sender's are its ICR
// writes, a halted receiver's its HLT and EOI exits (docs/apic-reference.md).
func (c KVMCounts) GuestExits() uint64 { return c[KVMExits] - min(c[KVMExits], c[KVMIRQExits]) }

// KVMSampler reads every vCPU's statistics at once (vmm: the vCPUs' stats
// files); nil for a VM whose sections need none.
type KVMSampler func() ([]KVMCounts, error)
