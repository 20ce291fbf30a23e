// This file holds the loop of a vCPU whose local APIC is KVM's own
// (--lapic=kvm, KVM's split irqchip): KVM injects, halts, takes INIT and
// SIPI and runs the timer inside KVM_RUN, so the loop only serves the
// exits that still reach user space (the exit bus's PIO, MMIO and MSRs,
// the IOAPIC's level-triggered EOIs) and the VM's end.

package vcpu

import (
	"errors"
	"fmt"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
)

// InKernel is what the loop asks of a vCPU whose LAPIC is in KVM (a
// *kvm.VCPU): the vector of a KVM_EXIT_IOAPIC_EOI, and the LAPIC's
// registers for a dump and a snapshot, and to restore them.
type InKernel interface {
	IOAPICEOIVector() uint8
	LAPIC() (kvm.LAPICState, error)
	SetLAPIC(kvm.LAPICState) error
}

var _ InKernel = (*kvm.VCPU)(nil)

// runInKernel is Run's loop when KVM holds the LAPIC (Config.InKernel).
// An AP needs nothing of govmm to start: KVM keeps it in its wait for
// SIPI inside KVM_RUN (its MP state is KVM_MP_STATE_UNINITIALIZED).
func (v *VCPU) runInKernel(run *kvm.Run) error {
	for {
		if v.stopped() {
			return nil
		}
		if err := v.maybePark(LoopRunning, false); errors.Is(err, errStop) {
			return nil
		} else if err != nil {
			return &Error{v.id, err}
		}
		v.yieldIfDue()
		v.enterGuestState()
		err := v.kvm.Run()
		v.state.Store(uint32(StateVMM))
		v.afterRun(err)
		v.maybeDump(run)
		if err != nil {
			if !endedWithoutExit(err) {
				return &Error{v.id, fmt.Errorf("KVM_RUN: %w", err)}
			}
			v.log.add(evKick, 0, run.Sync.Regs.RIP)
			v.kicked = true
		} else if run.ExitReason == kvm.ExitIOAPICEOI {
			vec := v.inKernel.IOAPICEOIVector()
			v.log.add(evExit, run.ExitReason, run.Sync.Regs.RIP)
			v.exits.Count(exitcause.IOAPICEOIExit)
			if v.ioapicEOI != nil {
				v.ioapicEOI(vec)
			}
		} else {
			err := v.handleExit(run)
			v.exits.End() // the window an exit's count opened (exitcause.Tally), if one did
			if err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return &Error{v.id, err}
			}
		}
		v.countInKernelKick()
	}
}

// countInKernelKick counts the kicked exit whose KVM_RUN just ended, if
// any. KVM's LAPIC never needs one to deliver (KVM kicks its own vCPUs),
// so a kick here brought the VM's end or a dump, or raced one.
func (v *VCPU) countInKernelKick() {
	if !v.kicked {
		return
	}
	v.kicked = false
	if v.stopped() {
		v.exits.Count(exitcause.Kick)
		return
	}
	v.exits.Count(exitcause.KickSpurious)
}
