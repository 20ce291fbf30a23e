// This file holds the XSAVE family completed by govmm where the host's
// emulator cannot (model in package xstate).

package complete

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/arch/x86/x86asm"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/xstate"
)

// Completing the XSAVE family for hosts whose instruction emulator gives up
// on it in guest kernel mode (the emulating host of docs/hosts.md: XSAVE,
// XSAVEC, XRSTOR and XGETBV end KVM_RUN with an emulation failure; its
// emulator completes XSETBV itself, em_xsetbv, so govmm's XSETBV path
// serves hosts where it does not). The architecture is package xstate's; this file moves state
// between it, KVM (KVM_GET/SET_XSAVE, KVM_GET/SET_XCRS) and guest memory
// (linearRange: the guest's page tables, with #PF where they refuse).
//
// Without this a guest kernel must be booted with noxsave: it then switches
// tasks with FXSAVE, which keeps only x87, MXCSR and XMM0-15, while its user
// programs run natively with AVX and AVX-512 enabled (on that host, guest
// user code runs with the host's XCR0): every context switch lost their
// upper vector state. Measured there too: user code keeps AVX-512 usable
// even under a guest XCR0 of 0x7, so a guest kernel must enable every
// component user space can use (docs/hosts.md).

// xstateOp classifies the instructions this file completes.
func xstateOp(op x86asm.Op) (save xstate.SaveOp, restore, ok bool) {
	switch op {
	case x86asm.XSAVE, x86asm.XSAVE64:
		return xstate.XSAVE, false, true
	case x86asm.XSAVEOPT, x86asm.XSAVEOPT64:
		return xstate.XSAVEOPT, false, true
	case x86asm.XSAVEC, x86asm.XSAVEC64:
		return xstate.XSAVEC, false, true
	case x86asm.XSAVES, x86asm.XSAVES64:
		return xstate.XSAVES, false, true
	case x86asm.XRSTOR, x86asm.XRSTOR64:
		return 0, true, true
	case x86asm.XRSTORS, x86asm.XRSTORS64:
		return xstate.XSAVES, true, true // XSAVES marks the supervisor form
	}
	return 0, false, false
}

// MSRXSS is IA32_XSS, the supervisor components XSAVES and XRSTORS move.
const MSRXSS = 0xDA0

// completeXState completes inst if it is one of the XSAVE family: it
// returns handled=false for any other instruction. A fault the instruction
// raises is injected (RIP stays); on success RIP moves past it.
func (u *Unit) completeXState(inst x86asm.Inst, mode int) (handled bool, err error) {
	if _, _, isArea := xstateOp(inst.Op); u.xstate == nil || !isArea && inst.Op != x86asm.XGETBV && inst.Op != x86asm.XSETBV {
		return false, nil
	}
	run := u.hw.RunData()
	regs := &run.Sync.Regs
	sregs, err := u.sregs() // read by recover already: no second ioctl
	if err != nil {
		return true, err
	}
	var cause exitcause.Cause
	var fault xstate.Fault
	var pf *pageFault
	switch inst.Op {
	case x86asm.XGETBV:
		cause = exitcause.RecoverXGETBV
		fault, err = u.xgetbv(regs, sregs)
	case x86asm.XSETBV:
		cause = exitcause.RecoverXSETBV
		fault, err = u.xsetbv(regs, sregs)
	default:
		save, restore, _ := xstateOp(inst.Op)
		cause = exitcause.RecoverXSAVE
		if restore {
			cause = exitcause.RecoverXRSTOR
		}
		fault, pf, err = u.xsaveArea(inst, save, restore, mode, regs, sregs)
	}
	switch {
	case err != nil:
		u.count(exitcause.Other)
		return true, fmt.Errorf("completing %s at RIP %#x: %w", inst.Op, regs.RIP, err)
	case pf != nil:
		u.count(exitcause.RecoverXStateFault)
		return true, u.injectException(14, &pf.code, &pf.addr)
	case fault != xstate.OK:
		u.count(exitcause.RecoverXStateFault)
		return true, u.injectFault(fault)
	}
	u.count(cause)
	regs.RIP += uint64(inst.Len)
	run.DirtyRegs |= kvm.SyncRegsGPR
	return true, nil
}

const (
	cr0TS      = 1 << 3
	cr4OSXSAVE = 1 << 18
)

// xstateUsable applies the checks every XSAVE-family instruction makes
// first (SDM vol. 2): CR4.OSXSAVE, else #UD; CR0.TS, else #NM (not for
// XGETBV and XSETBV).
func xstateUsable(s *kvm.Sregs, ts bool) xstate.Fault {
	switch {
	case s.CR4&cr4OSXSAVE == 0:
		return xstate.UD
	case ts && s.CR0&cr0TS != 0:
		return xstate.NM
	}
	return xstate.OK
}

func cpl(s *kvm.Sregs) uint8 { return s.CS.DPL }

func edxEAX(r *kvm.Regs) uint64 { return r.RDX<<32 | r.RAX&0xFFFFFFFF }

func (u *Unit) xgetbv(regs *kvm.Regs, s *kvm.Sregs) (xstate.Fault, error) {
	if f := xstateUsable(s, false); f != xstate.OK {
		return f, nil
	}
	xcr0, err := u.hw.XCR0()
	if err != nil {
		return 0, err
	}
	if err := u.hw.XSAVE(u.xsaveBuf); err != nil {
		return 0, err
	}
	val, f := u.xstate.XGETBV(uint32(regs.RCX), xcr0, u.xsaveBuf)
	if f == xstate.OK {
		regs.RAX, regs.RDX = val&0xFFFFFFFF, val>>32
	}
	return f, nil
}

func (u *Unit) xsetbv(regs *kvm.Regs, s *kvm.Sregs) (xstate.Fault, error) {
	if f := xstateUsable(s, false); f != xstate.OK {
		return f, nil
	}
	val := edxEAX(regs)
	if cpl(s) != 0 || uint32(regs.RCX) != 0 {
		return xstate.GP, nil
	}
	if f := u.xstate.SetXCR0(val); f != xstate.OK {
		return f, nil
	}
	// KVM checks the value against the vCPU's CPUID too (__kvm_set_xcr);
	// what it refuses, the guest's processor does not support.
	if err := u.hw.SetXCR0(val); err != nil {
		return xstate.GP, nil
	}
	return xstate.OK, nil
}

// xsaveArea completes a save (XSAVE, XSAVEOPT, XSAVEC, XSAVES) or restore
// (XRSTOR, XRSTORS) of the area its memory operand names.
func (u *Unit) xsaveArea(inst x86asm.Inst, op xstate.SaveOp, restore bool, mode int, regs *kvm.Regs, s *kvm.Sregs) (xstate.Fault, *pageFault, error) {
	if u.mem == nil {
		return 0, nil, fmt.Errorf("no guest memory to complete it on")
	}
	if f := xstateUsable(s, true); f != xstate.OK {
		return f, nil, nil
	}
	supervisor := op == xstate.XSAVES
	if supervisor && cpl(s) != 0 {
		return xstate.GP, nil, nil
	}
	m, ok := inst.Args[0].(x86asm.Mem)
	if !ok {
		return xstate.UD, nil, nil
	}
	la, ok := operandAddress(m, inst, regs, s)
	if !ok {
		return 0, nil, fmt.Errorf("cannot compute the address of % x", inst)
	}
	if la&63 != 0 {
		return xstate.GP, nil, nil
	}
	xcr0, err := u.hw.XCR0()
	if err != nil {
		return 0, nil, err
	}
	permitted := xcr0
	if supervisor {
		if xss, err := u.hw.GetMSR(MSRXSS); err == nil {
			permitted |= xss
		}
	}
	if permitted&u.xstate.SupervisorMask != 0 {
		// KVM's XSAVE image holds no supervisor component.
		return 0, nil, fmt.Errorf("the guest enabled supervisor state components %#x (IA32_XSS), which govmm cannot move", permitted&u.xstate.SupervisorMask)
	}
	rfbm := edxEAX(regs) & permitted
	if err := u.hw.XSAVE(u.xsaveBuf); err != nil {
		return 0, nil, err
	}
	mode64 := mode == 64
	if restore {
		hdr, pf, err := u.readLinear(s, la+xstate.HeaderOffset, xstate.HeaderSize)
		if pf != nil || err != nil {
			return 0, pf, err
		}
		size, f := u.xstate.RestoreArea(hdr, permitted, supervisor)
		if f != xstate.OK {
			return f, nil, nil
		}
		area, pf, err := u.readLinear(s, la, uint64(size))
		if pf != nil || err != nil {
			return 0, pf, err
		}
		if f := u.xstate.Restore(u.xsaveBuf, area, rfbm, mode64); f != xstate.OK {
			return f, nil, nil
		}
		return xstate.OK, nil, u.hw.SetXSAVE(u.xsaveBuf)
	}
	size := max(u.xstate.SaveSize(op, rfbm), xstate.HeaderOffset+xstate.HeaderSize)
	pages, pf, err := linearRange(u.mem, s, la, uint64(size), true)
	if pf != nil || err != nil {
		return 0, pf, err
	}
	var old [8]byte
	gather(old[:], pages, xstate.HeaderOffset)
	for _, st := range u.xstate.Save(op, u.xsaveBuf, rfbm, binary.LittleEndian.Uint64(old[:]), mode64) {
		scatter(pages, st.Off, st.Data)
	}
	return xstate.OK, nil, nil
}

// readLinear copies n bytes at linear address la out of guest memory.
func (u *Unit) readLinear(s *kvm.Sregs, la, n uint64) ([]byte, *pageFault, error) {
	pages, pf, err := linearRange(u.mem, s, la, n, false)
	if pf != nil || err != nil {
		return nil, pf, err
	}
	out := make([]byte, n)
	gather(out, pages, 0)
	return out, nil, nil
}

// gather copies len(dst) bytes from offset off of the range pages holds.
func gather(dst []byte, pages [][]byte, off uint32) {
	at := uint32(0)
	for _, p := range pages {
		if off < at+uint32(len(p)) && len(dst) > 0 {
			n := copy(dst, p[max(off, at)-at:])
			dst, off = dst[n:], off+uint32(n)
		}
		at += uint32(len(p))
	}
}

// scatter copies data to offset off of the range pages holds.
func scatter(pages [][]byte, off uint32, data []byte) {
	at := uint32(0)
	for _, p := range pages {
		if off < at+uint32(len(p)) && len(data) > 0 {
			n := copy(p[max(off, at)-at:], data)
			data, off = data[n:], off+uint32(n)
		}
		at += uint32(len(p))
	}
}

// injectFault injects the exception an XSAVE-family check raised.
func (u *Unit) injectFault(f xstate.Fault) error {
	zero := uint32(0)
	switch f {
	case xstate.GP:
		return u.injectException(13, &zero, nil)
	case xstate.UD:
		return u.injectException(6, nil, nil)
	case xstate.NM:
		return u.injectException(7, nil, nil)
	}
	return fmt.Errorf("no exception for %v", f)
}

// injectException makes the guest take exception vec (a fault: RIP stays
// at the instruction) with an error code when code is non-nil, and for a
// #PF with CR2 = *cr2.
func (u *Unit) injectException(vec uint8, code *uint32, cr2 *uint64) error {
	run := u.hw.RunData()
	if cr2 != nil {
		cur, err := u.sregs()
		if err != nil {
			return err
		}
		s := *cur
		s.CR2 = *cr2
		if err := u.hw.SetSregs(s); err != nil {
			return err
		}
		run.Sync.Sregs.CR2 = *cr2
	}
	ev, err := u.hw.Events()
	if err != nil {
		return err
	}
	ev.Exception.Injected, ev.Exception.Nr, ev.Exception.HasErrorCode, ev.Exception.ErrorCode = 1, vec, 0, 0
	if code != nil {
		ev.Exception.HasErrorCode, ev.Exception.ErrorCode = 1, *code
	}
	ev.Flags = 0
	if err := u.hw.SetEvents(ev); err != nil {
		return err
	}
	u.out.ExceptionQueued = true
	return nil
}
