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
// trampoline's doorbell store, which leaves RIP past itself.
func brokenSyscall(regs *kvm.Regs, star, lstar, fmask uint64) {
	regs.RCX = regs.RIP + 2
	regs.R11 = regs.RFLAGS &^ flagRF
	regs.RFLAGS &^= fmask | flagRF
	regs.RIP = lstar + TrampolineStoreLen // mov %al, disp32(%rip)
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
	const entry = 0xffffffff81a00000
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
			// linux-all-flags has IOPL 3: Complete is right for it, but no
			// CPL3 program has those flags, so Check refuses it.
			want := Genuine
			if !UserRFLAGS(regs.R11) {
				want = NotUserRFLAGS
			}
			if v := Check(&regs, &sregs, true, c.lstar, c.fmask); v != want {
				t.Fatalf("Check = %v, want %v", v, want)
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

// Linux's STAR and FMASK (arch/x86/kernel/cpu/common.c, syscall_init), and
// a trampoline in the fixmap.
const (
	linuxSTAR  = uint64(0x23)<<48 | uint64(0x10)<<32
	linuxFMASK = 0x257FD5
	tramp      = 0xffffffffff5fe000
)

// TestCheck: each way a CPL3 program can ring the doorbell without SYSCALL,
// and the genuine case. Each forgery starts from a genuine SYSCALL's state
// and changes what the forger controls (or the one thing under test).
func TestCheck(t *testing.T) {
	// noIF: a FMASK that leaves IF alone but masks everything else, so that
	// a forged R11 passes the masking rule and only the R11 rule is left.
	const noIF = 0xFFFFFFFF &^ flagIF &^ flagReserved1
	genuine := func(rflags, fmask uint64) (kvm.Regs, kvm.Sregs) {
		regs, sregs := userState(0x401000, rflags)
		brokenSyscall(&regs, linuxSTAR, tramp, fmask)
		return regs, sregs
	}
	for _, c := range []struct {
		name  string
		fmask uint64
		armed bool
		edit  func(*kvm.Regs, *kvm.Sregs)
		want  Verdict
	}{
		{"genuine", linuxFMASK, true, nil, Genuine},
		{"genuine-no-if-in-fmask", noIF, true, nil, Genuine},
		{"genuine-fmask-0", 0, true, nil, Genuine},
		{"from-cpl0", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) {
			s.CS.DPL, s.CS.Selector = 0, 0x10
		}, FromKernel},
		{"from-cpl0-disarmed", linuxFMASK, false, func(r *kvm.Regs, s *kvm.Sregs) {
			s.CS.DPL, s.CS.Selector = 0, 0x10
		}, FromKernel},
		{"disarmed", linuxFMASK, false, nil, Disarmed},
		// A store from the process's own code: any RIP but the trampoline's.
		{"store-elsewhere", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RIP = 0x401234 }, NotTrampoline},
		{"movabs-in-trampoline", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RIP = tramp + 9 }, NotTrampoline},
		{"rip-at-lstar", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RIP = tramp }, NotTrampoline},
		{"rip-one-short", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RIP = tramp + 5 }, NotTrampoline},
		// A jump to the trampoline: RFLAGS is the process's, IF=1.
		{"jump-to-trampoline", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RFLAGS = 0x246 }, NotMasked},
		{"jump-r11-iopl3", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) {
			r.RFLAGS, r.R11 = 0x246, 0x3246
		}, NotMasked},
		{"jump-r11-if0", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) {
			r.RFLAGS, r.R11 = 0x246, 0x046
		}, NotMasked},
		{"rflags-rf-set", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RFLAGS |= flagRF }, NotMasked},
		{"rflags-high-bit", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RFLAGS |= 1 << 40 }, NotMasked},
		// R11 bits no CPL3 program has, masked away from RFLAGS by FMASK.
		{"r11-iopl3", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= flagIOPL }, NotUserRFLAGS},
		{"r11-iopl1", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 12 }, NotUserRFLAGS},
		{"r11-if0", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 &^= flagIF }, NotUserRFLAGS},
		{"r11-vm", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= flagVM }, NotUserRFLAGS},
		{"r11-vif", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= flagVIF }, NotUserRFLAGS},
		{"r11-vip", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= flagVIP }, NotUserRFLAGS},
		{"r11-rf", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= flagRF }, NotUserRFLAGS},
		{"r11-bit1-clear", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 &^= flagReserved1 }, NotUserRFLAGS},
		{"r11-reserved-bit3", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 3 }, NotUserRFLAGS},
		{"r11-reserved-bit5", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 5 }, NotUserRFLAGS},
		{"r11-reserved-bit15", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 15 }, NotUserRFLAGS},
		{"r11-reserved-bit22", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 22 }, NotUserRFLAGS},
		{"r11-reserved-bit31", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 31 }, NotUserRFLAGS},
		// Bits FMASK cannot mask: RFLAGS would have to show them too.
		{"r11-reserved-bit40", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) { r.R11 |= 1 << 40 }, NotMasked},
		{"r11-and-rflags-bit63", noIF, true, func(r *kvm.Regs, s *kvm.Sregs) {
			r.R11 |= 1 << 63
			r.RFLAGS |= 1 << 63
		}, NotUserRFLAGS},
		{"rcx-not-canonical", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RCX = 0x0000800000000000 }, NotCanonical},
		{"rcx-kernel-half", linuxFMASK, true, func(r *kvm.Regs, s *kvm.Sregs) { r.RCX = 0xffffffff81000000 }, Genuine},
	} {
		t.Run(c.name, func(t *testing.T) {
			regs, sregs := genuine(0x246, c.fmask)
			if c.edit != nil {
				c.edit(&regs, &sregs)
			}
			before, sbefore := regs, sregs
			v := Check(&regs, &sregs, c.armed, tramp, c.fmask)
			if v != c.want {
				t.Errorf("Check = %v, want %v (rip %#x rflags %#x r11 %#x rcx %#x)", v, c.want, regs.RIP, regs.RFLAGS, regs.R11, regs.RCX)
			}
			if v.Fault() != (c.want != Genuine && c.want != FromKernel) {
				t.Errorf("%v.Fault() = %v", v, v.Fault())
			}
			if regs != before || sregs != sbefore {
				t.Error("Check changed the state")
			}
		})
	}
}

// TestUserRFLAGS: every combination of the bits a CPL3 program controls
// (CF PF AF ZF SF TF DF OF NT AC ID) is accepted, with bit 1 and IF set,
// and any other bit, alone, is refused; each such SYSCALL is genuine.
func TestUserRFLAGS(t *testing.T) {
	free := []uint64{0, 2, 4, 6, 7, 8, 10, 11, 14, 18, 21}
	for m := 0; m < 1<<len(free); m++ {
		r := uint64(flagReserved1 | flagIF)
		for i, b := range free {
			if m&(1<<i) != 0 {
				r |= 1 << b
			}
		}
		if !UserRFLAGS(r) {
			t.Fatalf("UserRFLAGS(%#x) = false", r)
		}
		regs, sregs := userState(0x401000, r)
		brokenSyscall(&regs, linuxSTAR, tramp, linuxFMASK)
		if v := Check(&regs, &sregs, true, tramp, linuxFMASK); v != Genuine {
			t.Fatalf("SYSCALL with RFLAGS %#x: Check = %v", r, v)
		}
	}
	isFree := map[uint64]bool{}
	for _, b := range free {
		isFree[b] = true
	}
	for b := uint64(0); b < 64; b++ {
		if isFree[b] || b == 1 || b == 9 {
			continue
		}
		if r := uint64(0x202) | 1<<b; UserRFLAGS(r) {
			t.Errorf("UserRFLAGS(%#x) = true: bit %d", r, b)
		}
	}
	if UserRFLAGS(0x200) || UserRFLAGS(0x002) {
		t.Error("bit 1 clear or IF clear accepted")
	}
}

// TestRefuse: a refused real SYSCALL (RFLAGS masked, IF 0) gets IF back;
// a forgery's state (IF already 1) is left alone.
func TestRefuse(t *testing.T) {
	regs, sregs := userState(0x401000, 0x246)
	brokenSyscall(&regs, linuxSTAR, tramp, linuxFMASK)
	if v := Check(&regs, &sregs, false, tramp, linuxFMASK); v != Disarmed {
		t.Fatalf("Check = %v", v)
	}
	want := regs
	want.RFLAGS |= flagIF
	if !Refuse(&regs) || regs != want {
		t.Errorf("Refuse: rflags %#x, want %#x", regs.RFLAGS, want.RFLAGS)
	}
	regs, _ = userState(tramp+TrampolineStoreLen, 0x246)
	before := regs
	if Refuse(&regs) || regs != before {
		t.Error("Refuse changed a state with IF set")
	}
}
