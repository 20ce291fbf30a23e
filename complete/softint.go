// This file holds INT n completed by govmm where the host's emulator
// cannot deliver it through the guest's IDT.

package complete

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
)

// Software interrupts (int n, opcode CD ib) in protected and long mode.
// KVM's instruction emulator completes them only in real mode
// (arch/x86/kvm/emulate.c: em_int -> emulate_int, whose protected-mode
// branch returns X86EMUL_UNHANDLEABLE), so a host that emulates guest
// kernel code hands every kernel-mode int n to user space as an emulation
// failure (docs/hosts.md). govmm performs the checks the instruction makes
// before it reaches the handler (SDM Vol. 2, INT n: IDT limit, gate type,
// gate DPL against CPL, present bit) and leaves the rest of the delivery
// (code segment, stack switch and IST, the frame, IF/TF) to the processor:
// it moves RIP past the instruction and injects vector n as an event
// without an error code, the same frame int n pushes.

// softIntFault is the exception int n raises instead of reaching its
// handler: #GP or #NP with the IDT error code (vector*8 + 2: IDT bit set,
// EXT clear because the instruction, not an external event, caused it).
type softIntFault struct {
	vector uint8 // 13 (#GP) or 11 (#NP); 0: no fault
	code   uint32
}

// gateSize is the size of one IDT entry: 16 bytes in long mode, 8 otherwise.
func gateSize(long bool) uint64 {
	if long {
		return 16
	}
	return 8
}

// checkSoftInt decides whether int vec at privilege cpl reaches its gate.
// gate holds the entry's first 8 bytes, or is nil when the entry lies
// beyond the IDT limit. taskGate reports a 32-bit task gate, which govmm
// does not switch tasks through.
func checkSoftInt(gate []byte, vec uint8, long bool, cpl uint8) (f softIntFault, taskGate bool) {
	gp := softIntFault{13, uint32(vec)*8 + 2}
	if gate == nil {
		return gp, false
	}
	access := gate[5]
	typ, dpl, present := access&0xF, access>>5&3, access&0x80 != 0
	switch {
	case long && typ != 0xE && typ != 0xF:
		return gp, false
	case !long && typ != 0x5 && typ != 0x6 && typ != 0x7 && typ != 0xE && typ != 0xF:
		return gp, false
	case dpl < cpl:
		return gp, false
	case !present:
		return softIntFault{11, uint32(vec)*8 + 2}, false
	}
	return softIntFault{}, !long && typ == 0x5
}

// completeSoftInt completes int n (n != 3: int3 is injectBP) for an
// instruction of n bytes at the current RIP.
func (u *Unit) completeSoftInt(inst x86asm.Inst, s *kvm.Sregs, mode int) error {
	imm, ok := inst.Args[0].(x86asm.Imm)
	if !ok {
		return fmt.Errorf("int with operand %v", inst.Args[0])
	}
	vec := uint8(imm)
	long := mode == 64
	size := gateSize(long)
	var gate []byte
	if off := uint64(vec) * size; off+size-1 <= uint64(s.IDT.Limit) {
		b, pf, err := u.readLinear(s, s.IDT.Base+off, 8)
		if err != nil {
			return err
		}
		if pf != nil {
			// The processor reads the IDT with supervisor rights; an
			// unmapped IDT is the guest's triple-fault-class error.
			return fmt.Errorf("int %#x: the IDT entry at %#x is not mapped", vec, s.IDT.Base+off)
		}
		gate = b
	}
	f, task := checkSoftInt(gate, vec, long, cpl(s))
	if f.vector != 0 {
		u.count(exitcause.RecoverIntN)
		return u.injectException(f.vector, &f.code, nil)
	}
	if task {
		u.count(exitcause.Other)
		return fmt.Errorf("int %#x through a task gate (selector %#x): govmm does not switch tasks", vec, binary.LittleEndian.Uint16(gate[2:]))
	}
	u.count(exitcause.RecoverIntN)
	return u.injectTrapEvent(uint64(inst.Len), func(ev *kvm.VCPUEvents) {
		// An injected event of interrupt type pushes no error code and
		// returns to the RIP it is entered with, as int n does. It is
		// not subject to RFLAGS.IF: it is already being delivered.
		ev.Interrupt.Injected, ev.Interrupt.Nr, ev.Interrupt.Soft = 1, vec, 0
	})
}
