package vcpu

import "github.com/govmm/govmm/kvm"

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
// mode, CS = vec << 8, IP = 0 (SDM 8.4.4.1); everything else as after INIT.
// Register edits an exit handler left for the next KVM_RUN to load (sync
// regs marked dirty) belong to the state INIT discarded: they are dropped,
// and the sync copies show the new state.
func startAt(c Hardware, vec uint8) error {
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
	s.CR0, s.CR2, s.CR3, s.CR4, s.EFER = 0x60000010, 0, 0, 0, 0
	s.InterruptBitmap = [4]uint64{} // nothing of before INIT is re-queued
	if err := c.SetSregs(s); err != nil {
		return err
	}
	r := kvm.Regs{RFLAGS: 2, RIP: 0}
	if err := c.SetRegs(r); err != nil {
		return err
	}
	run.Sync.Regs, run.Sync.Sregs = r, s
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
