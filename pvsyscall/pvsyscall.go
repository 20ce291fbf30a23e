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
//	mapped user-executable and its first instruction writes (any size, any
//	value) to the doorbell page, mapped user-writable; it must not change
//	RCX, R11 or RFLAGS before that write (a write does not: a read would be
//	replayed by KVM on resume, which is why the doorbell is a write).
//
//	On a doorbell write from CPL3 with MSRSyscallEntry set, govmm completes
//	the SYSCALL (Intel SDM vol. 2B, SYSCALL, IA-32e mode):
//	  RCX    = the user RIP after SYSCALL      (as the host left it in RCX)
//	  R11    = the user RFLAGS, RF cleared     (as the host left it in R11)
//	  RFLAGS = R11 AND NOT IA32_FMASK, RF cleared, bit 1 set
//	  CS     = IA32_STAR[47:32] AND 0xFFFC: flat 64-bit code, DPL 0
//	  SS     = IA32_STAR[47:32] + 8 (RPL not forced): flat writable data, DPL 0
//	  RIP    = MSRSyscallEntry
//	Everything else is left as it was (no stack switch: SYSCALL has none).
//	A doorbell write from CPL0, or with MSRSyscallEntry 0, is an ordinary
//	write to nothing and is ignored. An external interrupt that govmm had
//	committed for injection while user mode ran with IF=1, and that the
//	host held back until SYSCALL trapped, is withdrawn (KVM would deliver
//	it at CPL0 on the user stack): as SYSCALL masks IF, it waits in IRR
//	until the kernel enables interrupts.
//
// What the emulating host of docs/hosts.md leaves on the doorbell exit (measured
// with guest/baremetal/syscall.c): RCX and R11 as the architecture says,
// RFLAGS already masked, RIP past the trampoline's write, CS 0x33 / SS 0x2b
// with DPL 3. So govmm derives RFLAGS from R11 (right whatever the host
// did to RFLAGS) and sets RIP, CS and SS.
//
// The return to user space (SYSRET or IRET) needs nothing: it works on such
// hosts. The trampoline is also the one place that shows on a doorbell exit
// which user instruction issued the SYSCALL (RCX), so the accounting counts
// doorbell exits as their own cause.
package pvsyscall

import (
	"errors"

	"github.com/govmm/govmm/kvm"
)

// ABI constants.
const (
	FeatureDoorbell = 1 << 1     // in CPUID 0x40000101 EAX (pvipi.CPUIDFeatures)
	CPUIDDoorbell   = 0x40000102 // EAX, EBX: doorbell page GPA
	MSRSyscallEntry = 0x4D564F51
	// DoorbellGPA is where govmm puts the doorbell page: in the PCI hole,
	// below the IOAPIC, away from RAM, the LAPIC, the IOAPIC and the
	// remapping unit's registers.
	DoorbellGPA = 0xFEB00000
	DoorbellLen = 0x1000
)

// Architectural MSRs the transition reads.
const (
	MSRSTAR  = 0xC0000081
	MSRFMASK = 0xC0000084
)

// RFLAGS bits.
const (
	flagReserved1 = 1 << 1
	flagRF        = 1 << 16
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

// FromUser reports whether a doorbell exit came from CPL3, the only place a
// broken SYSCALL leaves the vCPU.
func FromUser(sregs *kvm.Sregs) bool {
	return sregs.CS.DPL == 3 || sregs.CS.Selector&3 == 3
}
