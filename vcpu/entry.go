// This file holds the boot register state: EntryState, which a boot
// protocol hands the BSP, and the segment set-ups it uses.

package vcpu

import (
	"fmt"

	"github.com/govmm/govmm/kvm"
)

// EntryState is the register state a boot protocol hands the BSP.
type EntryState struct {
	Regs  kvm.Regs
	Sregs func(s *kvm.Sregs) // edits the vCPU's reset sregs
}

func (e *EntryState) apply(c Hardware) error {
	s, err := c.Sregs()
	if err != nil {
		return err
	}
	if e.Sregs != nil {
		e.Sregs(&s)
	}
	if err := c.SetSregs(s); err != nil {
		return err
	}
	return c.SetRegs(e.Regs)
}

// Flat32 sets up 32-bit protected mode with paging off and flat 4 GiB
// segments, as Multiboot v1 requires at entry. The hidden segment state is
// loaded directly; the guest sets up its own GDT before reloading selectors.
func Flat32(s *kvm.Sregs) {
	code := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x10, Type: 0xB, Present: 1, DB: 1, S: 1, G: 1}
	data := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x18, Type: 0x3, Present: 1, DB: 1, S: 1, G: 1}
	s.CS = code
	s.DS, s.ES, s.FS, s.GS, s.SS = data, data, data, data, data
	s.TR = kvm.Segment{Limit: 0x67, Type: 0xB, Present: 1}
	s.LDT = kvm.Segment{Type: 0x2, Present: 1, Unusable: 1}
	s.CR0 = 0x11 // PE | ET
	s.CR4 = 0
	s.EFER = 0
}

// startAt puts the vCPU where a Startup IPI with vector vec sends it: real
// mode, CS = vec << 8, IP = 0 (SDM 8.4.4.1); everything else as after INIT,
// as KVM's own INIT leaves it (kvm_vcpu_reset with init_event): general
// registers zero but RDX, the processor signature sig; CR0.CD and CR0.NW
// kept (set at RESET, preserved by INIT); CR2, CR3, CR4 and EFER zero;
// DR0-DR3 zero, DR6 and DR7 at their reset values. Register edits an exit
// handler left for the next KVM_RUN to load (sync regs marked dirty)
// belong to the state INIT discarded: they are dropped, and the sync
// copies show the new state.
func startAt(c Hardware, vec uint8, sig uint32) error {
	run := c.RunData()
	run.DirtyRegs = 0
	s, err := c.Sregs()
	if err != nil {
		return err
	}
	seg := func(sel uint16, typ uint8) kvm.Segment {
		return kvm.Segment{Base: uint64(sel) << 4, Limit: 0xFFFF, Selector: sel, Type: typ, Present: 1, S: 1}
	}
	s.CS = seg(uint16(vec)<<8, 0xB)
	s.DS, s.ES, s.FS, s.GS, s.SS = seg(0, 3), seg(0, 3), seg(0, 3), seg(0, 3), seg(0, 3)
	s.TR = kvm.Segment{Limit: 0xFFFF, Type: 0xB, Present: 1}
	s.LDT = kvm.Segment{Limit: 0xFFFF, Type: 0x2, Present: 1}
	s.GDT = kvm.DTable{Limit: 0xFFFF}
	s.IDT = kvm.DTable{Limit: 0xFFFF}
	const cr0ET, cr0CDNW = 0x10, 0x60000000
	s.CR0, s.CR2, s.CR3, s.CR4, s.EFER = cr0ET|s.CR0&cr0CDNW, 0, 0, 0, 0
	s.InterruptBitmap = [4]uint64{} // nothing of before INIT is re-queued
	if err := c.SetSregs(s); err != nil {
		return err
	}
	r := kvm.Regs{RFLAGS: 2, RIP: 0, RDX: uint64(sig)}
	if err := c.SetRegs(r); err != nil {
		return err
	}
	if err := c.SetDebugRegs(kvm.DebugRegs{DR6: kvm.DR6Init, DR7: kvm.DR7Init}); err != nil {
		return err
	}
	run.Sync.Regs, run.Sync.Sregs = r, s
	return nil
}

// kvmPVMemoryMSRs are the MSRs of KVM's own paravirtual features that
// make KVM write into guest memory: kvmclock (both MSR_KVM_SYSTEM_TIME
// numbers), async page faults (MSR_KVM_ASYNC_PF_EN, _INT) and steal time
// (MSR_KVM_STEAL_TIME). KVM serves them in the kernel whether or not govmm
// has an APIC of its own.
var kvmPVMemoryMSRs = [...]uint32{0x12, 0x4B564D01, 0x4B564D02, 0x4B564D06, 0x4B564D03}

// disableKVMPV turns those features off at INIT, as KVM's own INIT does
// (kvm_vcpu_reset: kvmclock_reset, apf.msr_en_val, apf.msr_int_val and
// st.msr_val to 0). KVM never sees govmm's INIT: left on, kvmclock would
// go on updating a page the restarted CPU's new life may use for
// something else. Only a feature the guest turned on is written (KVM
// refuses some of these MSRs outright where the feature is unavailable,
// e.g. async PF without an in-kernel APIC).
func disableKVMPV(c Hardware) error {
	for _, m := range kvmPVMemoryMSRs {
		if v, err := c.GetMSR(m); err != nil || v == 0 {
			continue
		}
		if err := c.SetMSR(m, 0); err != nil {
			return fmt.Errorf("INIT: cannot turn off KVM's PV MSR %#x: %w", m, err)
		}
	}
	return nil
}

// Long64 returns the sregs of Linux's 64-bit boot protocol: long mode with
// paging on through cr3 (an identity map), flat segments __BOOT_CS = 0x10
// and __BOOT_DS = 0x18 from the GDT at gdt, interrupts off.
func Long64(cr3, gdt uint64, gdtLimit uint16) func(s *kvm.Sregs) {
	return func(s *kvm.Sregs) {
		code := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x10, Type: 0xB, Present: 1, S: 1, L: 1, G: 1}
		data := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x18, Type: 0x3, Present: 1, DB: 1, S: 1, G: 1}
		s.CS = code
		s.DS, s.ES, s.FS, s.GS, s.SS = data, data, data, data, data
		s.TR = kvm.Segment{Limit: 0x67, Type: 0xB, Present: 1}
		s.LDT = kvm.Segment{Type: 0x2, Present: 1, Unusable: 1}
		s.GDT = kvm.DTable{Base: gdt, Limit: gdtLimit}
		s.CR0 = 0x80050033 // PG | AM | WP | NE | ET | MP | PE
		s.CR3 = cr3
		s.CR4 = 0x20   // PAE
		s.EFER = 0x500 // LME | LMA
	}
}
