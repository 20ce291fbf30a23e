package complete

import (
	"encoding/binary"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
)

// longModeMem maps linear 0xFFFF800000000000 + x to physical 0x200000 + x
// with 4 KiB pages (4 levels), and linear 0x400000 to physical 0x600000
// with one 2 MiB page.
func longModeMem(t *testing.T) (*memory.Memory, *kvm.Sregs) {
	mem, err := memory.New(16 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mem.Close)
	put := func(gpa, v uint64) {
		b, _ := mem.Slice(gpa, 8)
		binary.LittleEndian.PutUint64(b, v)
	}
	const pml4, pdpt, pd, pt = 0x1000, 0x2000, 0x3000, 0x4000
	la := uint64(0xFFFF800000000000)
	put(pml4+(la>>39&511)*8, pdpt|3)
	put(pdpt+(la>>30&511)*8, pd|3)
	put(pd+(la>>21&511)*8, pt|3)
	put(pt+0, 0x200000|3)
	put(pml4+0, 0x5000|3)
	put(0x5000+0, 0x6000|3)
	put(0x6000+2*8, 0x600000|0x83) // 2 MiB page at linear 0x400000
	s := &kvm.Sregs{CR0: 1<<31 | 1, CR3: pml4, CR4: 1 << 5, EFER: 0x500}
	s.CS.L = 1
	return mem, s
}

func TestTranslate(t *testing.T) {
	mem, s := longModeMem(t)
	for _, c := range []struct{ la, pa uint64 }{
		{0xFFFF800000000123, 0x200123},
		{0x400000 + 0x1234, 0x601234},
	} {
		got, err := translate(mem, s, c.la)
		if err != nil || got != c.pa {
			t.Errorf("translate(%#x) = %#x, %v; want %#x", c.la, got, err, c.pa)
		}
	}
	if _, err := translate(mem, s, 0x7000_0000_0000); err == nil {
		t.Error("unmapped address translated")
	}
}

func TestCompleteCmpxchg16b(t *testing.T) {
	mem, s := longModeMem(t)
	u := &Unit{mem: mem}
	// lock cmpxchg16b [rdi]
	inst, err := x86asm.Decode([]byte{0xF0, 0x48, 0x0F, 0xC7, 0x0F}, 64)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := mem.Slice(0x200040, 16)
	binary.LittleEndian.PutUint64(b, 1)
	binary.LittleEndian.PutUint64(b[8:], 2)
	regs := kvm.Regs{RDI: 0xFFFF800000000040, RAX: 1, RDX: 2, RBX: 3, RCX: 4}
	if !u.completeMem(inst, &regs, s) || regs.RFLAGS&(1<<6) == 0 {
		t.Fatal("equal compare did not swap")
	}
	if binary.LittleEndian.Uint64(b) != 3 || binary.LittleEndian.Uint64(b[8:]) != 4 {
		t.Fatalf("memory % x", b)
	}
	regs = kvm.Regs{RDI: 0xFFFF800000000040, RAX: 9, RDX: 9, RBX: 5, RCX: 6, RFLAGS: 1 << 6}
	if !u.completeMem(inst, &regs, s) || regs.RFLAGS&(1<<6) != 0 || regs.RAX != 3 || regs.RDX != 4 {
		t.Fatalf("unequal compare: %+v", regs)
	}
	// popcnt rax, [rdi+8] reads the 4 stored above: 1 bit.
	inst, _ = x86asm.Decode([]byte{0xF3, 0x48, 0x0F, 0xB8, 0x47, 0x08}, 64)
	regs = kvm.Regs{RDI: 0xFFFF800000000040}
	if !u.completeMem(inst, &regs, s) || regs.RAX != 1 {
		t.Fatalf("popcnt from memory: %+v", regs)
	}
}
