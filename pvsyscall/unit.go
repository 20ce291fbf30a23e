package pvsyscall

import (
	"fmt"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// Unit is the SYSCALL doorbell of a VM: its CPUID bit and leaf, its MSR
// (claimed whether or not the doorbell is offered: without it the MSR
// answers #GP, charged the same) and, when offered, the doorbell page.
type Unit struct {
	enabled bool
	// entry[cpu] is that vCPU's MSRSyscallEntry: the kernel's real SYSCALL
	// entry; 0: the doorbell is off. Each slot belongs to its vCPU's
	// thread.
	entry []uint64
}

// New returns the unit for cpus vCPUs; enabled offers the doorbell.
func New(enabled bool, cpus int) *Unit { return &Unit{enabled: enabled, entry: make([]uint64, cpus)} }

// CPUID sets the feature bit when offered; the doorbell leaf is always
// there.
func (u *Unit) CPUID(l *hvcpuid.Leaves) {
	if u.enabled {
		l.Features |= FeatureDoorbell
	}
	l.More = append(l.More, kvm.CPUIDEntry{Function: CPUIDDoorbell, EAX: DoorbellGPA & 0xFFFFFFFF, EBX: DoorbellGPA >> 32})
}

// Register claims the MSR and, when the doorbell is offered, its page.
func (u *Unit) Register(b *exitbus.Bus) error {
	err := b.Register(exitbus.Range{Space: exitbus.MSR, Base: MSRSyscallEntry, Len: 1, Name: "SYSCALL_ENTRY", PerCPU: true, Filter: true,
		Cause:   exitbus.ReadWrite(exitcause.MSRSyscallEntryRead, exitcause.MSRSyscallEntryWrite),
		Handler: exitbus.HandlerFunc(u.entryMSR)})
	if err != nil || !u.enabled {
		return err
	}
	return b.Register(exitbus.Range{Space: exitbus.MMIO, Base: DoorbellGPA, Len: DoorbellLen, Name: "SYSCALL doorbell",
		Cause: exitbus.HandlerCharges, Handler: exitbus.HandlerFunc(u.doorbell)})
}

// entryMSR serves MSRSyscallEntry: the guest's real entry.
func (u *Unit) entryMSR(a *exitbus.Access) error {
	switch {
	case !u.enabled:
		return vlapic.ErrGP
	case !a.Write:
		a.Value = u.entry[a.CPU]
		return nil
	case CheckEntry(a.Value) != nil:
		return vlapic.ErrGP
	}
	u.entry[a.CPU] = a.Value
	return nil
}

// doorbell serves an access to the doorbell page. A write that is the
// trampoline's store right after a SYSCALL (Check) is completed to the
// kernel's entry at CPL0. Anything else completes no transition and is
// counted as forged: a write from CPL3 gets #GP(0) (the process is killed
// with SIGSEGV, or handles it and goes on after the store); a write from
// CPL0 and any read are accesses to nothing.
func (u *Unit) doorbell(a *exitbus.Access) error {
	c := a.VCPU.KVM()
	run := c.RunData()
	regs := &run.Sync.Regs
	sregs, err := a.VCPU.Sregs()
	if err != nil {
		return err
	}
	if !a.Write {
		a.Charge(exitcause.SyscallDoorbellForged)
		for i := range a.Data {
			a.Data[i] = 0xFF
		}
		return nil
	}
	entry := u.entry[a.CPU]
	armed := entry != 0
	var lstar, fmask uint64
	if armed && FromUser(sregs) {
		var err1, err2 error
		lstar, err1 = c.GetMSR(MSRLSTAR)
		fmask, err2 = c.GetMSR(MSRFMASK)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("SYSCALL doorbell: reading LSTAR/FMASK: %w", firstErr(err1, err2))
		}
	}
	verdict := Check(regs, sregs, armed, lstar, fmask)
	if verdict != Genuine {
		a.Charge(exitcause.SyscallDoorbellForged)
		if !verdict.Fault() {
			return nil
		}
		if err := forged(a.VCPU, run); err != nil {
			return fmt.Errorf("SYSCALL doorbell: forged (%v) at RIP %#x: %w", verdict, regs.RIP, err)
		}
		return nil
	}
	a.Charge(exitcause.SyscallDoorbell)
	if pendingInterrupt(sregs) {
		// KVM holds an interrupt govmm injected while user mode had IF=1
		// and that the host did not deliver before SYSCALL trapped. KVM
		// would deliver it at the next entry whatever RFLAGS.IF says: at
		// CPL0 on the user stack, before the entry's first instruction.
		// Architecturally SYSCALL came first and masked IF, so take the
		// injection back; the vector waits in IRR until the kernel
		// enables interrupts.
		if err := a.VCPU.WithdrawInjection(); err != nil {
			return fmt.Errorf("SYSCALL doorbell: %w", err)
		}
		sregs.InterruptBitmap = [4]uint64{}
	}
	star, err := c.GetMSR(MSRSTAR)
	if err != nil {
		return fmt.Errorf("SYSCALL doorbell: reading STAR: %w", err)
	}

	Complete(regs, sregs, star, fmask, entry)

	run.DirtyRegs |= kvm.SyncRegsGPR | kvm.SyncRegsSregs
	return nil
}

// forged answers a doorbell write from CPL3 that is not a SYSCALL with
// #GP(0). The store is done (KVM has moved RIP past it), so the fault
// reports the next instruction. An interrupt KVM still holds for injection
// goes back to IRR first, so that KVM has exactly one event to deliver;
// with the exception queued, the vCPU asks for an interrupt window and
// govmm injects it again when the guest can take it.
func forged(v exitbus.VCPU, run *kvm.Run) error {
	if Refuse(&run.Sync.Regs) {
		// KVM_SET_VCPU_EVENTS needs the registers in KVM first (as for
		// #BP in complete/complete.go), and they must not be written again at
		// entry.
		if err := v.KVM().SetRegs(run.Sync.Regs); err != nil {
			return err
		}
		run.DirtyRegs &^= kvm.SyncRegsGPR
	}
	if pendingInterrupt(&run.Sync.Sregs) {
		if err := v.WithdrawInjection(); err != nil {
			return err
		}
		run.Sync.Sregs.InterruptBitmap = [4]uint64{}
	}
	zero := uint32(0)
	return v.InjectException(VectorGP, &zero)
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

// Save returns each vCPU's registered SYSCALL entry (0: none), for a
// snapshot. Every vCPU must be parked.
func (u *Unit) Save() []uint64 { return append([]uint64(nil), u.entry...) }

// Restore sets each vCPU's registered SYSCALL entry; a list for another
// vCPU count is refused.
func (u *Unit) Restore(entry []uint64) error {
	if len(entry) != len(u.entry) {
		return fmt.Errorf("SYSCALL doorbell: %d vCPUs' entries for a VM of %d", len(entry), len(u.entry))
	}
	copy(u.entry, entry)
	return nil
}
