package complete

import (
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/kvm"
)

// TestComplete checks the register-only completions against what the
// instructions do on hardware (SDM vol. 2 POPCNT, LZCNT, TZCNT).
func TestComplete(t *testing.T) {
	cases := []struct {
		name  string
		code  []byte
		mode  int
		in    kvm.Regs
		check func(r kvm.Regs) bool
	}{
		{"fwait", []byte{0x9B}, 64, kvm.Regs{RAX: 7}, func(r kvm.Regs) bool { return r.RAX == 7 }},
		{"popcnt rax,rbx", []byte{0xF3, 0x48, 0x0F, 0xB8, 0xC3}, 64, kvm.Regs{RBX: 0xF0F0, RAX: ^uint64(0)},
			func(r kvm.Regs) bool { return r.RAX == 8 && r.RFLAGS&(1<<6) == 0 }},
		{"popcnt zero sets ZF", []byte{0xF3, 0x48, 0x0F, 0xB8, 0xC3}, 64, kvm.Regs{RBX: 0},
			func(r kvm.Regs) bool { return r.RAX == 0 && r.RFLAGS&(1<<6) != 0 }},
		{"popcnt eax,ebx zero-extends", []byte{0xF3, 0x0F, 0xB8, 0xC3}, 64, kvm.Regs{RBX: 0xFFFFFFFF00000003, RAX: ^uint64(0)},
			func(r kvm.Regs) bool { return r.RAX == 2 }},
		{"lzcnt ecx,edx", []byte{0xF3, 0x0F, 0xBD, 0xCA}, 64, kvm.Regs{RDX: 1},
			func(r kvm.Regs) bool { return r.RCX == 31 }},
		{"lzcnt of zero is width, CF", []byte{0xF3, 0x48, 0x0F, 0xBD, 0xCA}, 64, kvm.Regs{RDX: 0},
			func(r kvm.Regs) bool { return r.RCX == 64 && r.RFLAGS&1 != 0 }},
		{"tzcnt r8,r9", []byte{0xF3, 0x4D, 0x0F, 0xBC, 0xC1}, 64, kvm.Regs{R9: 0x100},
			func(r kvm.Regs) bool { return r.R8 == 8 }},
		{"tzcnt ax,bx keeps upper bits", []byte{0x66, 0xF3, 0x0F, 0xBC, 0xC3}, 64, kvm.Regs{RBX: 0, RAX: 0xABCD0000},
			func(r kvm.Regs) bool { return r.RAX == 0xABCD0010 && r.RFLAGS&1 != 0 }},
	}
	for _, c := range cases {
		inst, err := x86asm.Decode(c.code, c.mode)
		if err != nil {
			t.Fatalf("%s: decode: %v", c.name, err)
		}
		r := c.in
		if !completeRegs(inst, &r) {
			t.Errorf("%s: not completed", c.name)
			continue
		}
		if !c.check(r) {
			t.Errorf("%s: wrong result %+v", c.name, r)
		}
	}
	// Memory operands are not completed (they need a page walk).
	inst, _ := x86asm.Decode([]byte{0xF3, 0x48, 0x0F, 0xB8, 0x03}, 64) // popcnt rax,[rbx]
	r := kvm.Regs{}
	if completeRegs(inst, &r) {
		t.Error("popcnt with a memory operand was completed")
	}
}
