package vcpu

import (
	"fmt"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/pvsyscall"
	"github.com/govmm/govmm/vlapic"
)

// Completing SYSCALL on emulating hosts (package pvsyscall for the ABI).

// handleSyscallEntryMSR serves MSRSyscallEntry: the guest's real entry.
func (v *VCPU) handleSyscallEntryMSR(write bool, value uint64) (uint64, error) {
	switch {
	case !v.syscallDoorbell:
		return 0, vlapic.ErrGP
	case !write:
		return v.syscallEntry, nil
	case pvsyscall.CheckEntry(value) != nil:
		return 0, vlapic.ErrGP
	}
	v.syscallEntry = value
	return 0, nil
}

// doorbell serves a write to the doorbell page: the SYSCALL that reached the
// trampoline at CPL3 is completed to the kernel's entry at CPL0. Anything
// else that touches the page (a read, a write from CPL0, the doorbell not
// armed) is an access to nothing.
func (v *VCPU) doorbell(write bool, data []byte) error {
	v.acct.Exit(accounting.CauseSyscallDoorbell)
	run := v.kvm.RunData()
	regs, sregs := &run.Sync.Regs, &run.Sync.Sregs
	if !write {
		for i := range data {
			data[i] = 0xFF
		}
		return nil
	}
	if v.syscallEntry == 0 || !pvsyscall.FromUser(sregs) {
		return nil
	}
	if pendingInterrupt(sregs) {
		// KVM holds an interrupt govmm injected while user mode had IF=1
		// and that the host did not deliver before SYSCALL trapped. KVM
		// would deliver it at the next entry whatever RFLAGS.IF says: at
		// CPL0 on the user stack, before the entry's first instruction.
		// Architecturally SYSCALL came first and masked IF, so take the
		// injection back; the vector waits in IRR until the kernel
		// enables interrupts.
		if err := v.withdrawInjection(); err != nil {
			return fmt.Errorf("SYSCALL doorbell: %w", err)
		}
		sregs.InterruptBitmap = [4]uint64{}
	}
	star, err1 := v.kvm.GetMSR(pvsyscall.MSRSTAR)
	fmask, err2 := v.kvm.GetMSR(pvsyscall.MSRFMASK)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("SYSCALL doorbell: reading STAR/FMASK: %w", firstErr(err1, err2))
	}

	pvsyscall.Complete(regs, sregs, star, fmask, v.syscallEntry)

	run.DirtyRegs |= kvm.SyncRegsGPR | kvm.SyncRegsSregs
	return nil
}

// withdrawInjection cancels the interrupt KVM has queued for injection and
// gives its vector back to the LAPIC (and takes back its PV EOI offer).
func (v *VCPU) withdrawInjection() error {
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
	v.retractPVEOI()
	v.lapic.Unacknowledge(vec)
	v.acct.Withdraw(vec)
	return nil
}

// pendingInterrupt reports an external interrupt KVM has queued for
// injection (KVM_INTERRUPT done, not yet delivered).
func pendingInterrupt(s *kvm.Sregs) bool {
	return s.InterruptBitmap != [4]uint64{}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
