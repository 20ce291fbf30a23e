package main

import (
	"fmt"
	"math/rand/v2"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveYMM and haveZMM say whether user code may use the AVX and AVX-512F
// registers: the CPU has them (CPUID) and the kernel enabled their state
// (CPUID.1:ECX.OSXSAVE, and XGETBV(0) has bits 1-2, and 5-7 for AVX-512),
// as x/sys/cpu checks it. Go's runtime decides the same way to use them in
// memmove, so where these hold the kernel must save and restore that
// state, which FXSAVE (all a noxsave kernel does) does not cover. wideK
// says the opmask registers can be read whole (KMOVQ is AVX512BW; AVX512F
// alone has KMOVW, 16 bits). They are variables so the tests can take a
// feature away.
var (
	haveYMM = cpu.X86.HasAVX
	haveZMM = cpu.X86.HasAVX512F
	wideK   = cpu.X86.HasAVX512BW
)

// vecSpins is the rounds of a vector hold: millions, as xmmHold's, so a
// hold spans timer interrupts and signals.
const vecSpins = 2_000_000

// ymmRegs is what ymmHold holds: YMM0-15, 32 bytes each.
type ymmRegs [16][32]byte

// zmmRegs is what zmmHold holds: ZMM0-31, 64 bytes each, and the opmask
// registers K1-K7 (K0 is its scratch). vec_amd64.s has k at 2048.
type zmmRegs struct {
	z [32][64]byte
	k [7]uint64
}

var _ [0]struct{} = [unsafe.Offsetof(zmmRegs{}.k) - 2048]struct{}{} // k must be where vec_amd64.s reads it

// ymmHold (vec_amd64.s) is xmmHold for the whole 256 bits of YMM0-15: it
// loads them from ref and spins rounds 1..spins (spins at least 1),
// comparing every register with ref on each round, and returns the first
// register found changed and the round it was found in, or -1 and spins.
// After the checks of round pokeAt it reloads the registers from poke:
// that is how the tests change a register in the middle of a hold (0
// never does, and poke may then be nil).
//
//go:noescape
func ymmHold(ref *ymmRegs, spins uint64, poke *ymmRegs, pokeAt uint64) (changed int64, round uint64)

// zmmHold (vec_amd64.s) is ymmHold for ZMM0-31 and K1-K7 (all 64 bits of
// them with wideK, else the low 16, and ref's must then be 16-bit values).
// changed is 0-31 for ZMM0-31, 32-38 for K1-K7 (zmmName).
//
//go:noescape
func zmmHold(ref *zmmRegs, spins uint64, poke *zmmRegs, pokeAt uint64, wideK bool) (changed int64, round uint64)

// zmmName names what zmmHold's changed indexes.
func zmmName(changed int64) string {
	if changed < 0 {
		return "none"
	}
	if changed < 32 {
		return fmt.Sprintf("ZMM%d", changed)
	}
	return fmt.Sprintf("K%d", changed-31)
}

// randomYMM and randomZMM are fresh random values to hold;
func randomYMM(rng *rand.Rand) *ymmRegs {
	r := new(ymmRegs)
	for i := range r {
		fillRandom(r[i][:], rng)
	}
	return r
}

// randomZMM's opmask values are 16-bit unless wideK.
func randomZMM(rng *rand.Rand, wideK bool) *zmmRegs {
	r := new(zmmRegs)
	for i := range r.z {
		fillRandom(r.z[i][:], rng)
	}
	for i := range r.k {
		r.k[i] = rng.Uint64()
		if !wideK {
			r.k[i] &= 0xffff
		}
	}
	return r
}

func fillRandom(b []byte, rng *rand.Rand) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// ymmCheck runs ymmHold on fresh random values. Several goroutines per CPU
// do, each with its own values: a kernel that switches between their
// threads and keeps only the FXSAVE part hands one thread's (or zero)
// upper halves to the other.
func ymmCheck(s *stats, rng *rand.Rand) {
	if bad, round := ymmHold(randomYMM(rng), vecSpins, nil, 0); bad >= 0 {
		s.fail("YMM%d changed while user code held it (round %d of %d of checks): a lost or wrong AVX state restore (FXSAVE has only the low 128 bits)", bad, round, vecSpins)
		return
	}
	s.ymm.Add(1)
}

// zmmCheck is ymmCheck for the AVX-512 state.
func zmmCheck(s *stats, rng *rand.Rand) {
	if bad, round := zmmHold(randomZMM(rng, wideK), vecSpins, nil, 0, wideK); bad >= 0 {
		s.fail("%s changed while user code held it (round %d of %d of checks): a lost or wrong AVX-512 state restore (FXSAVE has none of ZMM16-31, the ZMM upper halves or the opmasks)", zmmName(bad), round, vecSpins)
		return
	}
	s.zmm.Add(1)
}
