package pvsyscall

import (
	"testing"

	"github.com/govmm/govmm/kvm"
)

// syscallSDM is SYSCALL in IA-32e mode as Intel SDM vol. 2B writes it,
// applied to the state right before the instruction (rip = its address,
// len 2): the reference the doorbell's completion must reproduce.
func syscallSDM(regs *kvm.Regs, sregs *kvm.Sregs, star, lstar, fmask uint64) {
	regs.RCX = regs.RIP + 2
	regs.R11 = regs.RFLAGS &^ flagRF
	regs.RFLAGS = regs.RFLAGS &^ (fmask | flagRF)
	regs.RIP = lstar
	cs := uint16(star>>32) & 0xFFFC
	sregs.CS = kvm.Segment{Selector: cs, Base: 0, Limit: 0xFFFFFFFF, Type: 11, S: 1, DPL: 0, Present: 1, L: 1, DB: 0, G: 1}
	sregs.SS = kvm.Segment{Selector: uint16(star>>32) + 8, Base: 0, Limit: 0xFFFFFFFF, Type: 3, S: 1, DPL: 0, Present: 1, DB: 1, G: 1}
}

// brokenSyscall is what the emulating host does (measured with the
// syscall guest, see guest/baremetal/README.md): RCX, R11 and RIP as the
// architecture says, RFLAGS masked, CS and SS left at CPL3; then the
// trampoline's doorbell write, which leaves RIP past itself.
func brokenSyscall(regs *kvm.Regs, star, lstar, fmask uint64) {
	regs.RCX = regs.RIP + 2
	regs.R11 = regs.RFLAGS &^ flagRF
	regs.RFLAGS &^= fmask | flagRF
	regs.RIP = lstar + 9 // movabs %al, moffs64
}

func userState(rip, rflags uint64) (kvm.Regs, kvm.Sregs) {
	regs := kvm.Regs{RIP: rip, RFLAGS: rflags, RAX: 60, RCX: 0x1111, R11: 0x2222, RSP: 0x7ffc0000}
	sregs := kvm.Sregs{
		CS: kvm.Segment{Selector: 0x33, Limit: 0xFFFFFFFF, Type: 11, S: 1, DPL: 3, Present: 1, L: 1, G: 1},
		SS: kvm.Segment{Selector: 0x2b, Limit: 0xFFFFFFFF, Type: 3, S: 1, DPL: 3, Present: 1, DB: 1, G: 1},
		DS: kvm.Segment{Selector: 0x2b, Type: 3, S: 1, DPL: 3, Present: 1},
	}
	return regs, sregs
}

func TestCompleteMatchesArchitecture(t *testing.T) {
	// Linux's STAR and FMASK (arch/x86/kernel/cpu/common.c, syscall_init).
	const linuxSTAR = uint64(0x23)<<48 | uint64(0x10)<<32
	const linuxFMASK = 0x257FD5
	const entry, tramp = 0xffffffff81a00000, 0xffffffffff5fe000
	for _, c := range []struct {
		name         string
		star, fmask  uint64
		rip, rflags  uint64
		entry, lstar uint64
	}{
		{"linux", linuxSTAR, linuxFMASK, 0x401000, 0x246, entry, tramp},
		{"linux-all-flags", linuxSTAR, linuxFMASK, 0x7f0000001234, 0x257FD7 | 0x200, entry, tramp},
		{"rf-set", linuxSTAR, 0, 0x401000, 0x10202, entry, tramp},
		{"syscall-guest", uint64(0x20)<<48 | uint64(0x18)<<32, 0x40700, 0x10309a - 2, 0x40AD7, 0x1030b1, 0x104000},
		{"rpl-bits-in-star", uint64(0x23)<<48 | uint64(0x13)<<32, 0, 0x1000, 0x202, entry, tramp},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantRegs, wantSregs := userState(c.rip, c.rflags)
			syscallSDM(&wantRegs, &wantSregs, c.star, c.entry, c.fmask)

			regs, sregs := userState(c.rip, c.rflags)
			brokenSyscall(&regs, c.star, c.lstar, c.fmask)
			if !FromUser(&sregs) {
				t.Fatal("a SYSCALL stuck at CPL3 is not recognised as coming from user mode")
			}
			Complete(&regs, &sregs, c.star, c.fmask, c.entry)
			wantRegs.RFLAGS |= flagReserved1
			if regs != wantRegs {
				t.Errorf("registers\n got %+v\nwant %+v", regs, wantRegs)
			}
			if sregs != wantSregs {
				t.Errorf("segments\n got %+v\nwant %+v", sregs, wantSregs)
			}
			if FromUser(&sregs) {
				t.Error("still CPL3 after completion")
			}
		})
	}
}

func TestCheckEntry(t *testing.T) {
	for _, c := range []struct {
		v  uint64
		ok bool
	}{
		{0xffffffff81000000, true}, {0x0000000000401000, true}, {0x00007fffffffffff, true},
		{0x0000800000000000, false}, {0xffff7fffffffffff, false}, {0xffff800000000000, true},
	} {
		if err := CheckEntry(c.v); (err == nil) != c.ok {
			t.Errorf("CheckEntry(%#x) = %v, want ok=%v", c.v, err, c.ok)
		}
	}
}
