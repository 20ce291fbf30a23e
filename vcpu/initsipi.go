// This file holds INIT and SIPI: completing the last exit before INIT,
// and an AP's (or an INITed CPU's) wait for its Startup IPI.

package vcpu

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// completeExit ends, before INIT, the exit the vCPU last took. KVM
// finishes a user-space exit only at the start of the next KVM_RUN
// (kvm_arch_vcpu_ioctl_run calls complete_userspace_io first: an IN's or
// MMIO read's data into its register and RIP past the instruction,
// complete_emulated_msr_access's #GP for an MSR govmm refused, RIP past a
// WRMSR it took). Left for the first KVM_RUN after SIPI, that completion
// would act on the real-mode start-up state: skip bytes of the
// trampoline, or queue a #GP there, which KVM, emulating the real-mode
// code on hosts without unrestricted guest, reports as an emulation
// failure (the in-guest fuzzer found this: an AP that took an MSR exit
// just as another CPU's INIT reached it died on its trampoline's far
// jump). So: KVM_RUN with immediate_exit, which completes the exit and
// returns EINTR without entering the guest, then drop any event that
// completion queued, as INIT does (kvm_vcpu_reset(init_event) clears
// the exception and interrupt queues and pending NMIs).
//
// Completing an MMIO read can take KVM's emulator to the instruction's
// next access (a string MOVS, an access split at a page boundary): that
// KVM_RUN returns that new exit instead of EINTR. It is served like any
// other, and KVM_RUN repeated, until the instruction is done.
func (v *VCPU) completeExit() error {
	const maxParts = 64 // a REP MOVS of an MMIO range completes in pieces
	run := v.kvm.RunData()
	for i := 0; ; i++ {
		v.kvm.SetImmediateExit(true)
		err := v.kvm.Run()
		v.afterRun() // a kick that came meanwhile is seen by the look that follows INIT
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				v.log.add(evINIT, uint32(i), run.Sync.Regs.RIP)
				break
			}
			return fmt.Errorf("KVM_RUN to complete the last exit before INIT: %w", err)
		}
		if i == maxParts {
			return fmt.Errorf("the instruction INIT interrupted was not complete after %d more exits", maxParts)
		}
		if err := v.handleExit(run); err != nil {
			return err
		}
	}
	ev, err := v.kvm.Events()
	if err != nil {
		return err
	}
	ev.Exception.Injected, ev.Exception.Pending, ev.Exception.HasErrorCode = 0, 0, 0
	ev.ExceptionHasPayload, ev.ExceptionPayload = 0, 0
	ev.Interrupt.Injected, ev.Interrupt.Shadow = 0, 0
	// NMIs unblocked too: KVM's own INIT clears the interruptibility state
	// (vmx_vcpu_reset writes GUEST_INTERRUPTIBILITY_INFO = 0: STI and MOV
	// SS shadows and NMI blocking), so a CPU INITed inside an NMI handler
	// takes NMIs again without waiting for an IRET it will never do.
	ev.NMI.Injected, ev.NMI.Pending, ev.NMI.Masked = 0, 0, 0
	ev.Flags = kvm.VCPUEventValidNMIPending | kvm.VCPUEventValidShadow
	return v.kvm.SetEvents(ev)
}

// waitSIPI parks the vCPU until a Startup IPI, then puts it in real mode at
// vector << 8. It returns errStop when the VM ends, and KVM's refusal of
// the start-up state as an error of its own.
func (v *VCPU) waitSIPI() error {
	v.state.Store(uint32(StateWaitSIPI))
	defer v.state.Store(uint32(StateVMM))
	// A SIPI latched together with the INIT that sent us here came after
	// it (INIT then SIPI is the only order software uses): keep it.
	v.events.NMIs = 0
	for {
		v.takeEvents()
		if v.events.INIT {
			v.events.INIT = false
			v.lapic.InitReset()
		}
		if v.events.SIPI {
			vec := v.events.SIPIVector
			v.events = vlapic.Events{}
			v.exceptionQueued = false
			if err := startAt(v.kvm, vec, v.sig); err != nil {
				return fmt.Errorf("starting at SIPI vector %#x: %w", vec, err)
			}
			v.log.add(evSIPI, uint32(vec), 0)
			v.acct.Wakeups.Add(1)
			return nil
		}
		select {
		case <-v.wake:
		case <-v.done:
			return errStop
		}
	}
}
