// This file holds what the exit bus's handlers may ask of the vCPU whose
// exit they serve (exitbus.VCPU); all on the vCPU's own thread, during the
// exit.

package vcpu

import (
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/kvm"
)

var _ exitbus.VCPU = (*VCPU)(nil)

// KVM returns the vCPU's KVM object (this exit's registers in RunData).
func (v *VCPU) KVM() exitbus.KVM { return v.kvm }

// Sregs returns this exit's segment and control registers (see sregs).
func (v *VCPU) Sregs() (*kvm.Sregs, error) { return v.sregs() }

// InjectException queues exception vector, with error code code (nil:
// none), for the next entry.
func (v *VCPU) InjectException(vector uint8, code *uint32) error {
	if err := v.completer.InjectException(vector, code); err != nil {
		return err
	}
	v.exceptionQueued = true
	return nil
}

// WithdrawInjection cancels the interrupt KVM has queued for injection and
// gives its vector back to the LAPIC (and takes back its PV EOI offer).
func (v *VCPU) WithdrawInjection() error {
	ev, err := v.kvm.Events()
	if err != nil {
		return err
	}
	if ev.Interrupt.Injected == 0 {
		return nil
	}
	vec := ev.Interrupt.Nr
	ev.Interrupt.Injected = 0
	ev.Flags = 0
	if err := v.kvm.SetEvents(ev); err != nil {
		return err
	}
	v.pvRetract()
	v.lapic.Unacknowledge(vec)
	v.obs.Withdrawn(v.id, vec)
	return nil
}
