// This file holds the guest page walk that completing an instruction
// with memory operands needs: linear to guest-physical, with #PF.

package complete

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
)

// translate walks the guest's page tables (4-level long mode, 32-bit PAE
// or non-PAE, or none with paging off) to turn a linear address into a
// guest-physical one, for completing instructions with memory operands. It
// checks presence only: the instruction already passed KVM's permission
// checks before the emulator gave up on it.
func translate(mem *memory.Memory, s *kvm.Sregs, la uint64) (uint64, error) {
	const (
		cr0PG   = 1 << 31
		cr4PAE  = 1 << 5
		cr4LA57 = 1 << 12
		pteP    = 1 << 0
		ptePS   = 1 << 7
		addr52  = 0x000FFFFFFFFFF000
	)
	if s.CR0&cr0PG == 0 {
		return la, nil
	}
	read := func(gpa uint64) (uint64, error) {
		b, err := mem.Slice(gpa, 8)
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint64(b), nil
	}
	if s.CR4&cr4PAE == 0 { // 32-bit paging
		b, err := mem.Slice(s.CR3&0xFFFFF000+(la>>22&0x3FF)*4, 4)
		if err != nil {
			return 0, err
		}
		pde := uint64(binary.LittleEndian.Uint32(b))
		if pde&pteP == 0 {
			return 0, fmt.Errorf("linear address %#x is not mapped", la)
		}
		if pde&ptePS != 0 {
			return pde&0xFFC00000 | la&0x3FFFFF, nil
		}
		b, err = mem.Slice(pde&0xFFFFF000+(la>>12&0x3FF)*4, 4)
		if err != nil {
			return 0, err
		}
		pte := uint64(binary.LittleEndian.Uint32(b))
		if pte&pteP == 0 {
			return 0, fmt.Errorf("linear address %#x is not mapped", la)
		}
		return pte&0xFFFFF000 | la&0xFFF, nil
	}
	levels, table := 4, s.CR3&addr52
	if s.EFER&(1<<10) == 0 { // PAE without long mode: 4-entry PDPT
		levels, table = 3, s.CR3&0xFFFFFFE0
	} else if s.CR4&cr4LA57 != 0 {
		levels = 5
	}
	for lvl := levels; lvl >= 1; lvl-- {
		shift := uint(12 + 9*(lvl-1))
		idx := la >> shift & 0x1FF
		if levels == 3 && lvl == 3 {
			idx = la >> 30 & 3
		}
		e, err := read(table + idx*8)
		if err != nil {
			return 0, err
		}
		if e&pteP == 0 {
			return 0, fmt.Errorf("linear address %#x is not mapped", la)
		}
		if lvl <= 3 && lvl > 1 && e&ptePS != 0 {
			mask := uint64(1)<<shift - 1
			return e&addr52&^mask | la&mask, nil
		}
		table = e & addr52
	}
	return table | la&0xFFF, nil
}

// operandAddress computes the linear address of a memory operand.
func operandAddress(m x86asm.Mem, inst x86asm.Inst, regs *kvm.Regs, s *kvm.Sregs) (uint64, bool) {
	var a uint64
	switch m.Base {
	case 0:
	case x86asm.RIP:
		a = regs.RIP + uint64(inst.Len)
	default:
		v, _, ok := readReg(regs, m.Base)
		if !ok {
			return 0, false
		}
		a = v
	}
	if m.Index != 0 {
		v, _, ok := readReg(regs, m.Index)
		if !ok {
			return 0, false
		}
		a += v * uint64(m.Scale)
	}
	a += uint64(m.Disp)
	switch m.Segment {
	case x86asm.FS:
		a += s.FS.Base
	case x86asm.GS:
		a += s.GS.Base
	}
	if s.CS.L == 0 {
		a &= 0xFFFFFFFF
	}
	return a, true
}

// GuestBytes returns the host bytes behind n guest bytes at linear address
// la, which must not cross a page.
func GuestBytes(mem *memory.Memory, s *kvm.Sregs, la uint64, n uint64) ([]byte, error) {
	if la&0xFFF+n > 0x1000 {
		return nil, fmt.Errorf("operand at %#x crosses a page", la)
	}
	gpa, err := translate(mem, s, la)
	if err != nil {
		return nil, err
	}
	return mem.Slice(gpa, n)
}

// pageFault is a #PF the guest must take instead of the access: the linear
// address (CR2) and the error code.
type pageFault struct {
	addr uint64
	code uint32
}

// #PF error code bits (SDM vol. 3, 4.7).
const (
	pfPresent = 1 << 0 // the page was present: a protection fault
	pfWrite   = 1 << 1
)

// translateAccess is translate for an access the emulator left to govmm
// that has not passed KVM's checks: a supervisor-mode read or write in
// 4-level long mode. It refuses a not-present page and, with CR0.WP, a
// write to a read-only one, with the #PF the processor raises, and sets
// the accessed bit of every entry it uses and the dirty bit of the leaf on
// a write, atomically, as the processor's page walker does (Linux relies
// on them to find written pages). Other paging modes fall back to
// translate's presence check.
func translateAccess(mem *memory.Memory, s *kvm.Sregs, la uint64, write bool) (uint64, *pageFault, error) {
	const (
		cr0PG, cr0WP = 1 << 31, 1 << 16
		cr4LA57      = 1 << 12
		eferLMA      = 1 << 10
		pteP, pteW   = 1 << 0, 1 << 1
		pteA, pteD   = 1 << 5, 1 << 6
		ptePS        = 1 << 7
		addr52       = 0x000FFFFFFFFFF000
	)
	if s.CR0&cr0PG == 0 || s.EFER&eferLMA == 0 || s.CR4&cr4LA57 != 0 {
		gpa, err := translate(mem, s, la)
		return gpa, nil, err
	}
	code := uint32(0)
	if write {
		code |= pfWrite
	}
	checkW := write && s.CR0&cr0WP != 0
	table := s.CR3 & addr52
	writable := true
	for lvl := 4; lvl >= 1; lvl-- {
		shift := uint(12 + 9*(lvl-1))
		b, err := mem.Slice(table+(la>>shift&0x1FF)*8, 8)
		if err != nil {
			return 0, nil, err
		}
		e := binary.LittleEndian.Uint64(b)
		if e&pteP == 0 {
			return 0, &pageFault{la, code}, nil
		}
		writable = writable && e&pteW != 0
		leaf := lvl == 1 || lvl <= 3 && e&ptePS != 0
		set := uint64(pteA)
		if leaf && write {
			set |= pteD
		}
		if leaf && checkW && !writable {
			return 0, &pageFault{la, code | pfPresent}, nil
		}
		if e&set != set {
			orPTE(b, set)
		}
		if leaf {
			mask := uint64(1)<<shift - 1
			return e&addr52&^mask | la&mask, nil, nil
		}
		table = e & addr52
	}
	panic("unreachable")
}

// linearRange returns the host bytes behind [la, la+n) for an access of
// the kind given, page by page, or the #PF of the first page that refuses
// it (then nothing is touched but accessed bits).
func linearRange(mem *memory.Memory, s *kvm.Sregs, la uint64, n uint64, write bool) ([][]byte, *pageFault, error) {
	var out [][]byte
	for n > 0 {
		chunk := min(n, 0x1000-la&0xFFF)
		gpa, pf, err := translateAccess(mem, s, la, write)
		if pf != nil || err != nil {
			return nil, pf, err
		}
		b, err := mem.Slice(gpa, chunk)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, b)
		la, n = la+chunk, n-chunk
	}
	return out, nil, nil
}
