// Package complete finishes the instructions the host's instruction
// emulator gives up on (KVM_EXIT_INTERNAL_ERROR, emulation sub-error), as
// measured in docs/hosts.md: what it can finish it finishes, and says how
// the exit is counted; anything else is an error naming the instruction's
// bytes, its decoding and the guest RIP.
//
// Finished here: int3 (inject #BP, RIP past it), int n (softint.go), fwait
// (no x87 exception is ever pending: a no-op), clac/stac (RFLAGS.AC), and
// popcnt, lzcnt, tzcnt with register and memory operands, cmpxchg16b
// (cmpxchg16b.go, on the guest's memory through its page tables,
// pagewalk.go), and the XSAVE family (xsave.go). Not SSE or AVX
// instructions: govmm's guest kernel runs none.
//
// The vCPU loop (package vcpu) reaches it through one entry, Unit.Complete,
// and counts the exit by the Outcome's cause: this package counts nothing.
package complete

import (
	"errors"
	"fmt"
	"math/bits"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/xstate"
)

// Hardware is what finishing an instruction asks of KVM's vCPU (a
// *kvm.VCPU in govmm; vcpu.Hardware holds it).
type Hardware interface {
	RunData() *kvm.Run
	SetRegs(r kvm.Regs) error
	GetMSR(index uint32) (uint64, error)
	Events() (kvm.VCPUEvents, error)
	SetEvents(e kvm.VCPUEvents) error
	SetSregs(s kvm.Sregs) error
	Internal() *kvm.InternalExit
	EmulationFailure() *kvm.EmulationFailure
	XSAVE(buf []byte) error
	SetXSAVE(buf []byte) error
	XCR0() (uint64, error)
	SetXCR0(v uint64) error
}

var _ Hardware = (*kvm.VCPU)(nil)

// Unit finishes one vCPU's instructions. Only that vCPU's thread uses it,
// during the exit it serves.
type Unit struct {
	hw    Hardware
	mem   *memory.Memory // nil: no memory operands are finished
	sregs func() (*kvm.Sregs, error)

	xstate   *xstate.Layout // nil: the XSAVE family is not finished here
	xsaveBuf []byte         // KVM's XSAVE image, reused by every completion

	out Outcome // the completion under way
}

// New returns the unit of the vCPU hw. sregs reads the exit's segment and
// control registers (the loop's cached read: one ioctl per exit at most).
// layout is the XSAVE layout the guest sees and xsaveSize KVM's XSAVE
// image size; a nil layout leaves the XSAVE family unfinished.
func New(hw Hardware, mem *memory.Memory, sregs func() (*kvm.Sregs, error), layout *xstate.Layout, xsaveSize int) *Unit {
	u := &Unit{hw: hw, mem: mem, sregs: sregs}
	if layout != nil {
		u.xstate, u.xsaveBuf = layout, make([]byte, max(xsaveSize, kvm.XSAVEMinSize))
	}
	return u
}

// Outcome is what one completion did.
type Outcome struct {
	// Cause is how the exit is counted: the instruction finished
	// (exitcause.Recover*), or Other when it was not.
	Cause exitcause.Cause
	// ExceptionQueued: an exception goes into the guest at the next
	// entry (KVM_SET_VCPU_EVENTS), so no interrupt may be injected with it.
	ExceptionQueued bool
}

// Complete finishes the instruction of this exit (KVM_EXIT_INTERNAL_ERROR).
// events is the vCPU's recent history, quoted when the instruction is one
// the unit does not finish.
func (u *Unit) Complete(events fmt.Stringer) (Outcome, error) {
	u.out = Outcome{Cause: exitcause.Other}
	err := u.complete(events)
	return u.out, err
}

// count sets the cause the exit is counted by.
func (u *Unit) count(c exitcause.Cause) { u.out.Cause = c }

// InjectException queues exception vec (a fault: RIP stays at the
// instruction) for the next entry, with error code code (nil: none), for
// an exit handler that refuses an access.
func (u *Unit) InjectException(vec uint8, code *uint32) error {
	return u.injectException(vec, code, nil)
}

func (u *Unit) complete(events fmt.Stringer) error {
	run := u.hw.RunData()
	ie := u.hw.Internal()
	if ie.Suberror != kvm.InternalErrorEmulation {
		u.count(exitcause.Other)
		return fmt.Errorf("KVM internal error, sub-error %d (data %#x)", ie.Suberror, ie.Data[:min(int(ie.NData), 16)])
	}
	ef := u.hw.EmulationFailure()
	regs := &run.Sync.Regs
	sregs, err := u.sregs()
	if err != nil {
		return err
	}
	var code []byte
	if ef.Flags&kvm.EmulationFlagInsnBytes != 0 && ef.InsnSize != 0 {
		code = ef.InsnBytes[:min(int(ef.InsnSize), len(ef.InsnBytes))]
	} else if code, err = u.fetch(sregs, regs.RIP); err != nil {
		// KVM gave no bytes (it had none: an instruction fetch that
		// faulted, or a kernel that reports none) and the guest's own
		// are not readable either.
		u.count(exitcause.Other)
		return fmt.Errorf("KVM could not emulate an instruction at CS:RIP %#x:%#x (CS base %#x, CR0 %#x) and gave no bytes; govmm cannot read them either: %v; the vCPU's last events: %v",
			sregs.CS.Selector, regs.RIP, sregs.CS.Base, sregs.CR0, err, events)
	}
	mode := 32
	switch {
	case sregs.CS.L != 0:
		mode = 64
	case sregs.CS.DB == 0:
		mode = 16
	}
	// x86asm does not know clac/stac (0F 01 CA/CB): complete them by bytes.
	if len(code) >= 3 && code[0] == 0x0F && code[1] == 0x01 && (code[2] == 0xCA || code[2] == 0xCB) {
		const rflagsAC = 1 << 18
		if code[2] == 0xCA {
			regs.RFLAGS &^= rflagsAC
		} else {
			regs.RFLAGS |= rflagsAC
		}
		u.count(exitcause.RecoverOther)
		regs.RIP += 3
		run.DirtyRegs |= kvm.SyncRegsGPR
		return nil
	}
	inst, err := x86asm.Decode(code, mode)
	if err != nil {
		u.count(exitcause.Other)
		return fmt.Errorf("KVM could not emulate the instruction % x at RIP %#x (undecodable: %v)", code, regs.RIP, err)
	}
	if handled, err := u.completeXState(inst, mode); handled {
		return err
	}
	if inst.Op == x86asm.INT && len(code) > 0 && code[0] == 0xCC {
		u.count(exitcause.RecoverInt3)
		return u.injectBP(uint64(inst.Len))
	}
	if inst.Op == x86asm.INT && len(code) > 0 && code[0] == 0xCD && sregs.CR0&1 != 0 {
		return u.completeSoftInt(inst, sregs, mode)
	}
	if !completeRegs(inst, regs) && !u.completeMem(inst, regs, sregs) {
		u.count(exitcause.Other)
		// In real mode (paging off) CS base is a physical address: the
		// code as the CPU found it in RAM, beside the bytes KVM fetched.
		seen := ""
		if mode == 16 && u.mem != nil {
			if b, err := u.mem.Slice(sregs.CS.Base, 0x20); err == nil {
				seen = fmt.Sprintf("; guest memory at CS base: % x", b)
			}
		}
		return fmt.Errorf("KVM could not emulate %q (% x) at CS:RIP %#x:%#x (CS base %#x, CR0 %#x, CR4 %#x, EFER %#x, RFLAGS %#x) in %d-bit mode, and govmm does not complete it%s; the vCPU's last events: %v",
			x86asm.IntelSyntax(inst, regs.RIP, nil), code[:inst.Len], sregs.CS.Selector, regs.RIP, sregs.CS.Base, sregs.CR0, sregs.CR4, sregs.EFER, regs.RFLAGS, mode, seen, events)
	}
	u.count(exitcause.RecoverOther)
	regs.RIP += uint64(inst.Len)
	run.DirtyRegs |= kvm.SyncRegsGPR
	return nil
}

// fetch reads the instruction at rip from guest memory, as the CPU would
// fetch it (CS base plus RIP, through the guest's page tables), up to 15
// bytes and not past the page.
func (u *Unit) fetch(sregs *kvm.Sregs, rip uint64) ([]byte, error) {
	if u.mem == nil {
		return nil, errors.New("no guest memory")
	}
	la := rip
	if sregs.CS.L == 0 {
		la = (sregs.CS.Base + rip) & 0xFFFFFFFF
	}
	return GuestBytes(u.mem, sregs, la, min(15, 0x1000-la&0xFFF))
}

// injectBP moves RIP past int3 and injects #BP (a trap: it reports the next
// instruction), which is what the CPU would have done.
func (u *Unit) injectBP(n uint64) error {
	return u.injectTrapEvent(n, func(ev *kvm.VCPUEvents) {
		ev.Exception.Injected, ev.Exception.Nr, ev.Exception.HasErrorCode = 1, 3, 0
	})
}

// injectTrapEvent moves RIP past an n-byte instruction and has KVM deliver
// the event set makes at the next entry, so that the handler's frame names
// the next instruction. No interrupt from govmm's LAPIC is injected in the
// same entry (exceptionQueued).
func (u *Unit) injectTrapEvent(n uint64, set func(*kvm.VCPUEvents)) error {
	run := u.hw.RunData()
	run.Sync.Regs.RIP += n
	run.DirtyRegs |= kvm.SyncRegsGPR
	// KVM_SET_VCPU_EVENTS needs RIP in KVM first: push the registers now.
	if err := u.hw.SetRegs(run.Sync.Regs); err != nil {
		return err
	}
	run.DirtyRegs &^= kvm.SyncRegsGPR
	ev, err := u.hw.Events()
	if err != nil {
		return err
	}
	set(&ev)
	ev.Flags = 0
	if err := u.hw.SetEvents(ev); err != nil {
		return err
	}
	u.out.ExceptionQueued = true
	return nil
}

// completeMem performs the instructions with a memory operand that this
// host's emulator leaves to user space: cmpxchg16b (done with a real locked
// cmpxchg16b on the guest's memory, so it stays atomic against the other
// vCPUs) and popcnt/lzcnt/tzcnt from memory.
func (u *Unit) completeMem(inst x86asm.Inst, regs *kvm.Regs, s *kvm.Sregs) bool {
	if u.mem == nil {
		return false
	}
	var m x86asm.Mem
	var reg x86asm.Reg
	switch inst.Op {
	case x86asm.CMPXCHG16B:
		mm, ok := inst.Args[0].(x86asm.Mem)
		if !ok {
			return false
		}
		m = mm
	case x86asm.POPCNT, x86asm.LZCNT, x86asm.TZCNT:
		r, ok1 := inst.Args[0].(x86asm.Reg)
		mm, ok2 := inst.Args[1].(x86asm.Mem)
		if !ok1 || !ok2 {
			return false
		}
		reg, m = r, mm
	default:
		return false
	}
	la, ok := operandAddress(m, inst, regs, s)
	if !ok {
		return false
	}
	const zf = 1 << 6
	if inst.Op == x86asm.CMPXCHG16B {
		if la&15 != 0 {
			return false // #GP(0) on hardware: left to the error path
		}
		b, err := GuestBytes(u.mem, s, la, 16)
		if err != nil {
			return false
		}
		lo, hi, swapped := cmpxchg16b(&b[0], regs.RAX, regs.RDX, regs.RBX, regs.RCX)
		if swapped {
			regs.RFLAGS |= zf
		} else {
			regs.RFLAGS &^= zf
			regs.RAX, regs.RDX = lo, hi
		}
		return true
	}
	_, width, ok := regSlot(regs, reg)
	if !ok {
		return false
	}
	b, err := GuestBytes(u.mem, s, la, uint64(width/8))
	if err != nil {
		return false
	}
	var val uint64
	for i := len(b) - 1; i >= 0; i-- {
		val = val<<8 | uint64(b[i])
	}
	// Reuse the register form on a scratch register holding the value.
	scratch := *regs
	scratch.RAX = val
	src := map[int]x86asm.Reg{16: x86asm.AX, 32: x86asm.EAX, 64: x86asm.RAX}[width]
	rinst := inst
	rinst.Args[1] = src
	if !completeRegs(rinst, &scratch) {
		return false
	}
	rv, _, _ := readReg(&scratch, reg)
	regs.RFLAGS = scratch.RFLAGS
	return writeReg(regs, reg, rv)
}

// complete performs inst on regs when it only touches registers.
func completeRegs(inst x86asm.Inst, regs *kvm.Regs) bool {
	switch inst.Op {
	case x86asm.FWAIT:
		return true
	case x86asm.POPCNT, x86asm.LZCNT, x86asm.TZCNT:
		dst, ok1 := inst.Args[0].(x86asm.Reg)
		src, ok2 := inst.Args[1].(x86asm.Reg)
		if !ok1 || !ok2 {
			return false
		}
		sv, width, ok := readReg(regs, src)
		if !ok {
			return false
		}
		var r uint64
		switch inst.Op {
		case x86asm.POPCNT:
			r = uint64(bits.OnesCount64(sv))
		case x86asm.LZCNT:
			r = uint64(bits.LeadingZeros64(sv) - (64 - width))
		case x86asm.TZCNT:
			r = uint64(bits.TrailingZeros64(sv))
			if sv == 0 {
				r = uint64(width)
			}
		}
		const zf, cf = 1 << 6, 1 << 0
		regs.RFLAGS &^= 0x8D5 // OF SF ZF AF PF CF
		if inst.Op == x86asm.POPCNT && sv == 0 || inst.Op != x86asm.POPCNT && r == 0 {
			regs.RFLAGS |= zf
		}
		if inst.Op != x86asm.POPCNT && r == uint64(width) {
			regs.RFLAGS |= cf
		}
		return writeReg(regs, dst, r)
	}
	return false
}

// regSlot maps a 16/32/64-bit general register to its kvm.Regs field.
func regSlot(regs *kvm.Regs, r x86asm.Reg) (*uint64, int, bool) {
	slots := [16]*uint64{&regs.RAX, &regs.RCX, &regs.RDX, &regs.RBX, &regs.RSP, &regs.RBP, &regs.RSI, &regs.RDI,
		&regs.R8, &regs.R9, &regs.R10, &regs.R11, &regs.R12, &regs.R13, &regs.R14, &regs.R15}
	switch {
	case r >= x86asm.RAX && r <= x86asm.R15:
		return slots[r-x86asm.RAX], 64, true
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return slots[r-x86asm.EAX], 32, true
	case r >= x86asm.AX && r <= x86asm.R15W:
		return slots[r-x86asm.AX], 16, true
	}
	return nil, 0, false
}

func readReg(regs *kvm.Regs, r x86asm.Reg) (uint64, int, bool) {
	p, w, ok := regSlot(regs, r)
	if !ok {
		return 0, 0, false
	}
	return *p & (^uint64(0) >> (64 - w)), w, true
}

// writeReg writes like the CPU: 32-bit results zero the upper half, 16-bit
// ones keep it.
func writeReg(regs *kvm.Regs, r x86asm.Reg, v uint64) bool {
	p, w, ok := regSlot(regs, r)
	if !ok {
		return false
	}
	switch w {
	case 64, 32:
		*p = v & (^uint64(0) >> (64 - w))
	case 16:
		*p = *p&^0xFFFF | v&0xFFFF
	}
	return true
}
