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

// doorbell serves an access to the doorbell page. A write that is the
// trampoline's store right after a SYSCALL (pvsyscall.Check) is completed to
// the kernel's entry at CPL0. Anything else completes no transition and is
// counted as forged: a write from CPL3 gets #GP(0) (the process is killed
// with SIGSEGV, or handles it and goes on after the store); a write from
// CPL0 and any read are accesses to nothing.
func (v *VCPU) doorbell(write bool, data []byte) error {
	run := v.kvm.RunData()
	regs := &run.Sync.Regs
	sregs, err := v.sregs()
	if err != nil {
		return err
	}
	if !write {
		v.acct.Exit(accounting.CauseSyscallDoorbellForged)
		for i := range data {
			data[i] = 0xFF
		}
		return nil
	}
	armed := v.syscallEntry != 0
	var lstar, fmask uint64
	if armed && pvsyscall.FromUser(sregs) {
		var err1, err2 error
		lstar, err1 = v.kvm.GetMSR(pvsyscall.MSRLSTAR)
		fmask, err2 = v.kvm.GetMSR(pvsyscall.MSRFMASK)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("SYSCALL doorbell: reading LSTAR/FMASK: %w", firstErr(err1, err2))
		}
	}
	verdict := pvsyscall.Check(regs, sregs, armed, lstar, fmask)
	if verdict != pvsyscall.Genuine {
		v.acct.Exit(accounting.CauseSyscallDoorbellForged)
		if !verdict.Fault() {
			return nil
		}
		if err := v.forgedDoorbell(run); err != nil {
			return fmt.Errorf("SYSCALL doorbell: forged (%v) at RIP %#x: %w", verdict, regs.RIP, err)
		}
		return nil
	}
	v.acct.Exit(accounting.CauseSyscallDoorbell)
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
	star, err := v.kvm.GetMSR(pvsyscall.MSRSTAR)
	if err != nil {
		return fmt.Errorf("SYSCALL doorbell: reading STAR: %w", err)
	}

	pvsyscall.Complete(regs, sregs, star, fmask, v.syscallEntry)

	run.DirtyRegs |= kvm.SyncRegsGPR | kvm.SyncRegsSregs
	return nil
}

// forgedDoorbell answers a doorbell write from CPL3 that is not a SYSCALL
// with #GP(0). The store is done (KVM has moved RIP past it), so the fault
// reports the next instruction. An interrupt KVM still holds for injection
// goes back to IRR first, so that KVM has exactly one event to deliver;
// with the exception queued, prepareEntry asks for an interrupt window and
// govmm injects it again when the guest can take it.
func (v *VCPU) forgedDoorbell(run *kvm.Run) error {
	if pvsyscall.Refuse(&run.Sync.Regs) {
		// KVM_SET_VCPU_EVENTS needs the registers in KVM first (as for
		// #BP in recover.go), and they must not be written again at entry.
		if err := v.kvm.SetRegs(run.Sync.Regs); err != nil {
			return err
		}
		run.DirtyRegs &^= kvm.SyncRegsGPR
	}
	if pendingInterrupt(&run.Sync.Sregs) {
		if err := v.withdrawInjection(); err != nil {
			return err
		}
		run.Sync.Sregs.InterruptBitmap = [4]uint64{}
	}
	zero := uint32(0)
	return v.injectException(pvsyscall.VectorGP, &zero, nil)
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
