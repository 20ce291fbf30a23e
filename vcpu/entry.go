// This file holds the boot register state: EntryState, which a boot
// protocol hands the BSP, and the segment set-ups it uses.

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
// segments (flatSegments), as Multiboot v1 requires at entry.
func Flat32(s *kvm.Sregs) {
	flatSegments(s, false)
	s.CR0 = 0x11 // PE | ET
	s.CR4 = 0
	s.EFER = 0
}

// Long64 returns the sregs of Linux's 64-bit boot protocol: long mode with
// paging on through cr3 (an identity map), flat segments __BOOT_CS = 0x10
// and __BOOT_DS = 0x18 from the GDT at gdt, interrupts off.
func Long64(cr3, gdt uint64, gdtLimit uint16) func(s *kvm.Sregs) {
	return func(s *kvm.Sregs) {
		flatSegments(s, true)
		s.GDT = kvm.DTable{Base: gdt, Limit: gdtLimit}
		s.CR0 = 0x80050033 // PG | AM | WP | NE | ET | MP | PE
		s.CR3 = cr3
		s.CR4 = 0x20   // PAE
		s.EFER = 0x500 // LME | LMA
	}
}

// flatSegments loads the flat segments both boot protocols enter with:
// code (selector 0x10) and data (0x18) with base 0 and a 4 GiB limit, the
// code segment 64-bit in long mode and 32-bit otherwise, and a busy TSS
// and an unusable LDT. The hidden segment state is loaded directly; the
// guest sets up its own GDT before reloading selectors.
func flatSegments(s *kvm.Sregs, long bool) {
	code := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x10, Type: 0xB, Present: 1, DB: 1, S: 1, G: 1}
	if long {
		code.DB, code.L = 0, 1
	}
	data := kvm.Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x18, Type: 0x3, Present: 1, DB: 1, S: 1, G: 1}
	s.CS = code
	s.DS, s.ES, s.FS, s.GS, s.SS = data, data, data, data, data
	s.TR = kvm.Segment{Limit: 0x67, Type: 0xB, Present: 1}
	s.LDT = kvm.Segment{Type: 0x2, Present: 1, Unusable: 1}
}
