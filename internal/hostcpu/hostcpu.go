// Package hostcpu asks the host processor itself: CPUID, XCR0, and the
// XSAVE family run natively, so that what govmm models of the processor
// (package xstate) is measured against the real thing.
package hostcpu

// CPUID executes CPUID on the host.
func CPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// XGETBV0 returns the host's XCR0.
func XGETBV0() uint64

// SaveBoth stores the current state with rfbm twice, back to back: XSAVE64
// (standard form) into std and XSAVEC64 (compacted) into cmp. Both must be
// 64-byte aligned and large enough. Nothing between the two changes state.
//
//go:noescape
func SaveBoth(std, cmp *byte, rfbm uint64)

// RestoreSave loads area with XRSTOR64 (either form) for rfbm, then stores
// the result with XSAVE64 into std, then loads back what was in the
// registers before (saved into scratch first), so the caller's state is
// unharmed.
//
//go:noescape
func RestoreSave(area, std, scratch *byte, rfbm uint64)
