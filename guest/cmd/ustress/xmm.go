package main

import (
	"math/rand/v2"
	"unsafe"
)

// xmmHold (xmm_amd64.s) loads X0-X14 from ref and spins for spins rounds,
// checking each register against ref every round: it returns the first
// one found changed, or -1. User code that holds values in registers
// across timer interrupts, signals and context switches must find them
// unchanged: the kernel saves and restores them (FXSAVE/FXRSTOR with
// noxsave, which the emulating host interprets in kernel mode).
//
//go:noescape
func xmmHold(ref *[15][16]byte, spins uint64) int64

// xmmCheck runs xmmHold on fresh random values.
func xmmCheck(s *stats, rng *rand.Rand) {
	buf := make([]byte, 15*16+16)
	off := (16 - uintptr(unsafe.Pointer(&buf[0]))%16) % 16 // PCMPEQB m128 needs 16-byte alignment
	ref := (*[15][16]byte)(unsafe.Pointer(&buf[off]))
	for i := range ref {
		for j := range ref[i] {
			ref[i][j] = byte(rng.Uint32())
		}
	}
	if bad := xmmHold(ref, 2_000_000); bad >= 0 {
		s.fail("XMM%d changed while user code held it (2M rounds of checks): a lost or wrong FPU restore", bad)
		return
	}
	s.xmm.Add(1)
}

// gprHold (xmm_amd64.s) is xmmHold for the general registers and RSP: it
// returns the index of the first one found changed (0 RBX, 1 RDX, 2 RSI,
// 3 RDI, 4-11 R8-R15, 12 RBP, 13 RSP), or -1.
//
//go:noescape
func gprHold(seed, spins uint64) int64

var gprNames = [...]string{"RBX", "RDX", "RSI", "RDI", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15", "RBP", "RSP"}

// gprCheck runs gprHold on a fresh seed.
func gprCheck(s *stats, rng *rand.Rand) {
	if bad := gprHold(rng.Uint64()>>8, 2_000_000); bad >= 0 {
		name := "?"
		if int(bad) < len(gprNames) {
			name = gprNames[bad]
		}
		s.fail("%s changed while user code held it (2M rounds of checks): a lost or wrong register restore", name)
		return
	}
	s.gpr.Add(1)
}
