// Package pvsyscall is govmm's SYSCALL doorbell: the way guest user space
// enters the guest kernel on hosts whose KVM interprets kernel code and gets
// SYSCALL wrong.
//
// On such hosts (docs/hosts.md) SYSCALL from CPL3 loads RIP from LSTAR but leaves
// CS and SS at their user values: the kernel's entry point then runs at CPL3
// and its first privileged instruction faults, so no Linux user space can
// run. What does work from CPL3 is an access to an unbacked guest-physical
// address: an ordinary MMIO exit to govmm, after which govmm may set any
// register and segment state before resuming. The doorbell uses exactly
// that: the guest kernel points LSTAR at a small user-executable trampoline
// whose first instruction writes to govmm's doorbell page; govmm, on that
// exit, completes the SYSCALL transition as the architecture defines it and
// resumes the vCPU at the kernel's real entry point, at CPL0.
//
// The doorbell is offered only when govmm detects an emulating host (or is
// told to); on hosts with VT-x or AMD-V SYSCALL works and LSTAR stays the
// kernel's own entry.
//
// ABI (version 1), beside the PV send-IPI ABI of package pvipi:
//
//	CPUID 0x40000101: EAX bit 1 = SYSCALL doorbell offered
//	CPUID 0x40000102: EAX, EBX = low, high 32 bits of the doorbell page's
//	                  guest-physical address (4 KiB, never RAM)
//
//	WRMSR 0x4D564F51 (MSRSyscallEntry): the guest-virtual address of the
//	  kernel's real SYSCALL entry (what LSTAR would hold), per vCPU, as LSTAR
//	  is; 0 turns the doorbell off. A non-canonical address: #GP(0).
//	  RDMSR returns the value. Without the feature bit: #GP(0).
//
//	The guest kernel then sets LSTAR to its trampoline. The trampoline is
//	mapped user-executable and its first instruction is the doorbell
//	store, in exactly this encoding (6 bytes, TrampolineStoreLen):
//
//	    88 05 <disp32>      mov %al, disp32(%rip)   ; into the doorbell page
//
//	(the doorbell page must be mapped within 2 GiB of the trampoline, as
//	the fixmap does for Linux). It is mapped user-writable. The trampoline
//	must not change RCX, R11 or RFLAGS before that store (a store does not:
//	a read would be replayed by KVM on resume, which is why the doorbell is
//	a write). What follows the store is never reached (ud2).
//
//	govmm completes a doorbell write as SYSCALL only when the vCPU is in
//	the state a SYSCALL that reached the trampoline leaves (Check), i.e.
//	when all of these hold:
//	  - CPL 3, and MSRSyscallEntry is set (the doorbell is armed);
//	  - RIP == LSTAR + 6: the exit is that very store, the trampoline's
//	    first instruction (a store anywhere else, or a jump into the
//	    trampoline's middle, has another RIP);
//	  - RFLAGS == (R11 AND NOT IA32_FMASK) OR 2: RFLAGS already masked, as
//	    the host's SYSCALL leaves it. With IF in FMASK (Linux's FMASK has
//	    it) this is the proof that SYSCALL happened: a CPL3 program runs
//	    with IF=1 and cannot clear it, so a plain jump to the trampoline
//	    arrives with IF=1;
//	  - R11 is an RFLAGS a CPL3 program can have (UserRFLAGS): bit 1 set;
//	    reserved bits 3, 5, 15 and 22-63 clear; IOPL 0 (POPF at CPL3
//	    cannot raise it, and Linux 6.1 emulates iopl() with the I/O bitmap,
//	    never with real IOPL); IF 1 (POPF at CPL3 with IOPL 0 cannot clear
//	    it, and the kernel always returns to user mode with it set); RF,
//	    VM, VIF and VIP clear (SYSCALL saves RF clear; VM cannot be 1 in
//	    64-bit mode; POPF at CPL3 does not set VIF or VIP). CF PF AF ZF SF
//	    TF DF OF NT AC ID are free;
//	  - RCX is canonical (the address after a SYSCALL always is).
//	Then govmm completes the SYSCALL (Intel SDM vol. 2B, SYSCALL, IA-32e
//	mode):
//	  RCX    = the user RIP after SYSCALL      (as the host left it in RCX)
//	  R11    = the user RFLAGS, RF cleared     (as the host left it in R11)
//	  RFLAGS = R11 AND NOT IA32_FMASK, RF cleared, bit 1 set
//	  CS     = IA32_STAR[47:32] AND 0xFFFC: flat 64-bit code, DPL 0
//	  SS     = IA32_STAR[47:32] + 8 (RPL not forced): flat writable data, DPL 0
//	  RIP    = MSRSyscallEntry
//	Everything else is left as it was (no stack switch: SYSCALL has none).
//	An external interrupt that govmm had committed for injection while
//	user mode ran with IF=1, and that the host held back until SYSCALL
//	trapped, is withdrawn (KVM would deliver it at CPL0 on the user stack):
//	as SYSCALL masks IF, it waits in IRR until the kernel enables
//	interrupts.
//
//	Any other write to the doorbell page is not a SYSCALL and completes no
//	transition (a forged doorbell: an unprivileged process writing the page
//	or jumping into the trampoline with its own RCX and R11):
//	  - from CPL3: govmm injects #GP(0), what an attempted privileged
//	    transition gets, so the kernel sends the process SIGSEGV. The store
//	    has been carried out (to nothing) when govmm sees it, so the #GP is
//	    reported after it: the frame's RIP is the next instruction (govmm
//	    cannot know where an arbitrary store began, and restarting it would
//	    only repeat it). A process that handles SIGSEGV and returns goes on
//	    from there; nothing loops and nothing hangs. If RFLAGS.IF is 0,
//	    which only the host's half-done SYSCALL leaves at CPL3 (a real
//	    SYSCALL refused, e.g. with the doorbell not armed), govmm sets it
//	    first (Refuse): a CPL3 context always runs with IF=1, and the
//	    process must not go on with interrupts off.
//	  - from CPL0: an ordinary write to nothing, ignored (the kernel's own
//	    business; a fault there would only crash it).
//	A read of the page returns all ones, from any CPL.
//	All of these are counted apart from completed SYSCALLs.
//
//	What this cannot tell apart: with a FMASK that leaves IF set, a jump to
//	the trampoline with R11 equal to the current RFLAGS and a canonical RCX
//	looks exactly like a SYSCALL and is completed as one. It gains nothing
//	a real SYSCALL would not give: the same RFLAGS, and a return to an
//	address the process could have jumped to.
//
// What the emulating host of docs/hosts.md leaves on the doorbell exit (measured
// with guest/baremetal/syscall.c): RCX and R11 as the architecture says,
// RFLAGS already masked (R11 AND NOT FMASK, e.g. R11 0x40ad7 with FMASK
// 0x40700 gives 0x8d7), RIP past the trampoline's store, CS 0x33 / SS 0x2b
// with DPL 3. Check requires exactly that; Complete derives RFLAGS from R11
// all the same and sets RIP, CS and SS.
//
// The return to user space (SYSRET or IRET) needs nothing: it works on such
// hosts. The trampoline is also the one place that shows on a doorbell exit
// which user instruction issued the SYSCALL (RCX), so the accounting counts
// doorbell exits as their own cause, and forged ones as another.
package pvsyscall

import (
	"errors"

	"github.com/govmm/govmm/kvm"
)

// ABI constants.
const (
	FeatureDoorbell = 1 << 1     // in CPUID 0x40000101 EAX (hvcpuid.Features)
	CPUIDDoorbell   = 0x40000102 // EAX, EBX: doorbell page GPA
	MSRSyscallEntry = 0x4D564F51
	// DoorbellGPA is where govmm puts the doorbell page: in the PCI hole,
	// below the IOAPIC, away from RAM, the LAPIC, the IOAPIC and the
	// remapping unit's registers.
	DoorbellGPA = 0xFEB00000
	DoorbellLen = 0x1000
)

// TrampolineStoreLen is the length of the trampoline's first instruction,
// mov %al, disp32(%rip) (88 05 disp32): a genuine doorbell exit has RIP ==
// LSTAR + TrampolineStoreLen.
const TrampolineStoreLen = 6

// Architectural MSRs the transition and Check read.
const (
	MSRSTAR  = 0xC0000081
	MSRLSTAR = 0xC0000082
	MSRFMASK = 0xC0000084
)

// VectorGP is the exception a forged doorbell write from CPL3 gets, with
// error code 0.
const VectorGP = 13

// RFLAGS bits.
const (
	flagReserved1 = 1 << 1
	flagIF        = 1 << 9
	flagIOPL      = 3 << 12
	flagRF        = 1 << 16
	flagVM        = 1 << 17
	flagVIF       = 1 << 19
	flagVIP       = 1 << 20
	// flagsReserved must be 0 (bits 3, 5, 15, 22-63).
	flagsReserved = 1<<3 | 1<<5 | 1<<15 | ^uint64(1<<22-1)
)

// ErrNotCanonical is a MSRSyscallEntry write the ABI answers with #GP.
var ErrNotCanonical = errors.New("pvsyscall: entry address is not canonical")

// CheckEntry validates a value written to MSRSyscallEntry.
func CheckEntry(v uint64) error {
	if !Canonical(v) {
		return ErrNotCanonical
	}
	return nil
}

// Canonical reports whether a is a canonical 48-bit virtual address.
func Canonical(a uint64) bool {
	top := a >> 47
	return top == 0 || top == 1<<17-1
}

// Complete turns the state a doorbell exit shows (a SYSCALL that reached the
// trampoline still at CPL3) into the state SYSCALL architecturally leads to,
// given IA32_STAR, IA32_FMASK and the kernel's entry point. It changes only
// RIP, RFLAGS, CS and SS.
func Complete(regs *kvm.Regs, sregs *kvm.Sregs, star, fmask, entry uint64) {
	sel := uint16(star >> 32)
	regs.RIP = entry
	regs.RFLAGS = regs.R11&^fmask&^flagRF | flagReserved1
	// The SDM forces CS's RPL to 0 but not SS's.
	sregs.CS = kvm.Segment{Selector: sel &^ 3, Limit: 0xFFFFFFFF, Type: 0xB, Present: 1, S: 1, L: 1, G: 1}
	sregs.SS = kvm.Segment{Selector: sel + 8, Limit: 0xFFFFFFFF, Type: 0x3, Present: 1, S: 1, DB: 1, G: 1}
}

// Verdict is Check's judgement of a doorbell write.
type Verdict uint8

const (
	Genuine       Verdict = iota // a SYSCALL that reached the trampoline: complete it
	FromKernel                   // a write from CPL0: to nothing, ignored
	Disarmed                     // CPL3, MSRSyscallEntry 0: #GP(0)
	NotTrampoline                // CPL3, RIP != LSTAR + TrampolineStoreLen: #GP(0)
	NotMasked                    // CPL3, RFLAGS != R11 AND NOT FMASK OR 2: #GP(0)
	NotUserRFLAGS                // CPL3, R11 is no CPL3 program's RFLAGS: #GP(0)
	NotCanonical                 // CPL3, RCX not canonical: #GP(0)
	numVerdicts
)

var verdictNames = [numVerdicts]string{"genuine", "from CPL0", "doorbell not armed",
	"RIP is not the trampoline's store", "RFLAGS not masked by FMASK",
	"R11 is not a user-mode RFLAGS", "RCX not canonical"}

func (v Verdict) String() string {
	if v < numVerdicts {
		return verdictNames[v]
	}
	return "verdict?"
}

// Fault reports whether the verdict's answer is #GP(0) to the guest (every
// forgery from CPL3).
func (v Verdict) Fault() bool { return v != Genuine && v != FromKernel }

// Check judges a doorbell write from the state its exit shows: whether it
// is the trampoline's store right after a SYSCALL (Genuine) or anything
// else (see the package doc). armed is MSRSyscallEntry != 0; lstar and
// fmask are IA32_LSTAR and IA32_FMASK (not looked at for FromKernel and
// Disarmed).
func Check(regs *kvm.Regs, sregs *kvm.Sregs, armed bool, lstar, fmask uint64) Verdict {
	switch {
	case !FromUser(sregs):
		return FromKernel
	case !armed:
		return Disarmed
	case regs.RIP != lstar+TrampolineStoreLen:
		return NotTrampoline
	case regs.RFLAGS != regs.R11&^fmask|flagReserved1:
		return NotMasked
	case !UserRFLAGS(regs.R11):
		return NotUserRFLAGS
	case !Canonical(regs.RCX):
		return NotCanonical
	}
	return Genuine
}

// Refuse prepares the registers of a doorbell write from CPL3 that is not
// a SYSCALL for its #GP(0): IF set, as in any CPL3 context (only a real
// SYSCALL, half done by the host, arrives with it clear). It reports
// whether it changed anything.
func Refuse(regs *kvm.Regs) bool {
	if regs.RFLAGS&flagIF != 0 {
		return false
	}
	regs.RFLAGS |= flagIF
	return true
}

// UserRFLAGS reports whether r is an RFLAGS value a CPL3 program can run
// with, as SYSCALL saves it in R11: bit 1 set, the reserved bits clear,
// IOPL 0, IF 1, RF, VM, VIF and VIP clear.
func UserRFLAGS(r uint64) bool {
	return r&flagReserved1 != 0 && r&flagIF != 0 &&
		r&(flagsReserved|flagIOPL|flagRF|flagVM|flagVIF|flagVIP) == 0
}

// FromUser reports whether a doorbell exit came from CPL3, the only place a
// broken SYSCALL leaves the vCPU.
func FromUser(sregs *kvm.Sregs) bool {
	return sregs.CS.DPL == 3 || sregs.CS.Selector&3 == 3
}
