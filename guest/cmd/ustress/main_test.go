package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRecurseMatchesExpect(t *testing.T) {
	for _, depth := range []int{1, 2, 100, 3000} {
		if got, want := recurse(depth, 42), expect(depth, 42); got != want {
			t.Errorf("depth %d: recurse %#x, expect %#x", depth, got, want)
		}
	}
}

func TestRunFindsNothingOnASaneMachine(t *testing.T) {
	s := run(300*time.Millisecond, 4, 0)
	if s.err != nil {
		t.Fatal(s.err)
	}
	counts := map[string]int64{"recursions": s.recursions.Load(), "buffers": s.buffers.Load(), "copies": s.copies.Load(), "memmoves": s.moves.Load(),
		"XMM holds": s.xmm.Load(), "register holds": s.gpr.Load(), "discards": s.zaps.Load(), "GCs": s.gcs.Load()}
	line := s.summary(300*time.Millisecond, 4)
	for _, v := range []struct {
		have      bool
		holds, na string
		n         int64
	}{{haveYMM, "YMM holds", "ymm n/a", s.ymm.Load()}, {haveZMM, "ZMM holds", "zmm n/a", s.zmm.Load()}} {
		switch {
		case v.have:
			counts[v.holds] = v.n
		case v.n != 0 || !strings.Contains(line, v.na):
			t.Errorf("without the registers: %d %s, and the summary %q does not say %q", v.n, v.holds, line, v.na)
		}
	}
	for name, n := range counts {
		if n == 0 {
			t.Errorf("no %s in the run", name)
		}
		if !strings.Contains(line, fmt.Sprintf("%d %s", n, name)) {
			t.Errorf("summary %q does not say %d %s", line, n, name)
		}
	}
}

// TestVectorHoldsSkippedWithoutTheFeature takes AVX and AVX-512 away: the
// holds must not run (they would fault on a CPU without them) and the
// summary must say they are not applicable rather than count them.
func TestVectorHoldsSkippedWithoutTheFeature(t *testing.T) {
	savedYMM, savedZMM, savedDoing := haveYMM, haveZMM, doing
	defer func() { haveYMM, haveZMM, doing = savedYMM, savedZMM, savedDoing }()
	haveYMM, haveZMM = false, false
	doing = map[string]bool{"ymm": true, "zmm": true, "gpr": true}
	s := run(50*time.Millisecond, 2, 0)
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.ymm.Load() != 0 || s.zmm.Load() != 0 || s.gpr.Load() == 0 {
		t.Errorf("%d YMM holds, %d ZMM holds, %d register holds; want 0, 0 and some", s.ymm.Load(), s.zmm.Load(), s.gpr.Load())
	}
	line := s.summary(50*time.Millisecond, 2)
	for _, want := range []string{"ymm n/a (no AVX)", "zmm n/a (no AVX-512F)"} {
		if !strings.Contains(line, want) {
			t.Errorf("summary %q does not say %q", line, want)
		}
	}
}

// TestVectorDetectionAgreesWithTheKernel checks haveYMM and haveZMM
// against the host kernel's view: a feature it lists in /proc/cpuinfo it
// has enabled in XCR0, so the detection must find it. (The other way need
// not hold: a kernel booted with noxsave lists no AVX, yet a CPU or VMM
// may still let user code use it, which is the case ustress is for.)
func TestVectorDetectionAgreesWithTheKernel(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	var flags []string
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
			flags = strings.Fields(v)
			break
		}
	}
	if flags == nil {
		t.Skip("no flags line in /proc/cpuinfo")
	}
	if slices.Contains(flags, "avx") && !haveYMM {
		t.Error("the kernel lists avx, haveYMM is false")
	}
	if slices.Contains(flags, "avx512f") && !haveZMM {
		t.Error("the kernel lists avx512f, haveZMM is false")
	}
	if slices.Contains(flags, "avx512bw") && !wideK {
		t.Error("the kernel lists avx512bw, wideK is false")
	}
}

// pokeAt is the round after which the detection tests change a register
// in the middle of a hold, of pokeSpins rounds.
const pokeAt, pokeSpins = 1000, 3000

// TestYMMHoldFindsAChangedRegister changes one byte of one register in the
// middle of a hold, for every register and bytes in both halves: the hold
// must name that register, in the round after the change. Reloading
// without a change must find nothing.
func TestYMMHoldFindsAChangedRegister(t *testing.T) {
	if !haveYMM {
		t.Skip("no AVX")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ref := randomYMM(rng)
	if bad, round := ymmHold(ref, pokeSpins, ref, pokeAt); bad != -1 || round != pokeSpins {
		t.Fatalf("unchanged: register %d in round %d, want -1 after %d rounds", bad, round, pokeSpins)
	}
	for reg := range ref {
		for _, at := range []int{0, 15, 16, 31} { // low half, and the upper that FXSAVE misses
			poke := *ref
			poke[reg][at] ^= 0x80
			if bad, round := ymmHold(ref, pokeSpins, &poke, pokeAt); bad != int64(reg) || round != pokeAt+1 {
				t.Errorf("byte %d of YMM%d changed after round %d: the hold found register %d in round %d", at, reg, pokeAt, bad, round)
			}
		}
	}
}

// TestZMMHoldFindsAChangedRegister is TestYMMHoldFindsAChangedRegister for
// ZMM0-31 and K1-K7, these read 16 bits wide (as on a CPU with AVX512F
// alone) and, where the CPU can, 64.
func TestZMMHoldFindsAChangedRegister(t *testing.T) {
	if !haveZMM {
		t.Skip("no AVX-512F")
	}
	widths := []bool{false}
	if wideK {
		widths = append(widths, true)
	}
	for _, wide := range widths {
		rng := rand.New(rand.NewPCG(3, 4))
		ref := randomZMM(rng, wide)
		if bad, round := zmmHold(ref, pokeSpins, ref, pokeAt, wide); bad != -1 || round != pokeSpins {
			t.Fatalf("wide K %v, unchanged: %s in round %d, want -1 after %d rounds", wide, zmmName(bad), round, pokeSpins)
		}
		for reg := range ref.z {
			for _, at := range []int{0, 16, 32, 63} { // each 128-bit lane
				poke := *ref
				poke.z[reg][at] ^= 0x80
				if bad, round := zmmHold(ref, pokeSpins, &poke, pokeAt, wide); bad != int64(reg) || round != pokeAt+1 {
					t.Errorf("wide K %v: byte %d of ZMM%d changed after round %d: the hold found %s in round %d", wide, at, reg, pokeAt, zmmName(bad), round)
				}
			}
		}
		bits := []uint{0, 15}
		if wide {
			bits = append(bits, 16, 63)
		}
		for k := range ref.k {
			for _, bit := range bits {
				poke := *ref
				poke.k[k] ^= 1 << bit
				if bad, round := zmmHold(ref, pokeSpins, &poke, pokeAt, wide); zmmName(bad) != fmt.Sprintf("K%d", k+1) || round != pokeAt+1 {
					t.Errorf("wide K %v: bit %d of K%d changed after round %d: the hold found %s in round %d", wide, bit, k+1, pokeAt, zmmName(bad), round)
				}
			}
		}
	}
}

func TestChunkDiff(t *testing.T) {
	want := make([]byte, 40)
	for i := range want {
		want[i] = byte(i)
	}
	got := slices.Clone(want)
	if d := chunkDiff(got, want); d != "" {
		t.Errorf("equal: %q", d)
	}
	got[17] = 0xff
	got[39] = 0
	if d, w := chunkDiff(got, want), "2 of 3 16-byte chunks differ: "+
		"+0x10 want 101112131415161718191a1b1c1d1e1f got 10ff12131415161718191a1b1c1d1e1f, "+
		"+0x20 want 2021222324252627 got 2021222324252600"; d != w {
		t.Errorf("got\n%s\nwant\n%s", d, w)
	}

	// A lost upper half in every 32-byte store of a 320-byte copy: every
	// other chunk differs, the first 8 are shown.
	want = make([]byte, 320)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	got = slices.Clone(want)
	for lo := 16; lo < len(got); lo += 32 {
		clear(got[lo : lo+16])
	}
	d := chunkDiff(got, want)
	if !strings.HasPrefix(d, "10 of 20 16-byte chunks differ: +0x10 want ") || !strings.HasSuffix(d, ", and 2 more") ||
		strings.Count(d, " want ") != 8 || strings.Count(d, " got "+strings.Repeat("00", 16)) != 8 || strings.Contains(d, "+0x20 ") {
		t.Errorf("chunkDiff = %q", d)
	}
}

// TestMoveCheckFindsNothing runs moveCheck with Go's copy over many sizes
// and places.
func TestMoveCheckFindsNothing(t *testing.T) {
	s := &stats{}
	rng := rand.New(rand.NewPCG(5, 6))
	const moves = 120
	for range moves {
		moveCheck(s, rng, goCopy)
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.moves.Load() != moves {
		t.Errorf("%d memmoves counted, want %d", s.moves.Load(), moves)
	}
}

// TestMoveCheckReportsLostChunks gives moveCheck copies that go wrong as
// a lost upper register half would (16 bytes of zeros in the destination)
// and that write past the end: the report must show those chunks.
func TestMoveCheckReportsLostChunks(t *testing.T) {
	zeros := strings.Repeat("00", 16)
	for _, c := range []struct {
		name string
		move func(dst, src []byte)
		want []string
	}{
		{"lost upper half", func(dst, src []byte) {
			copy(dst, src)
			if len(dst) >= 48 {
				clear(dst[32:48])
			}
		}, []string{"in the destination: 1 of ", " 16-byte chunks differ: +0x20 want ", " got " + zeros}},
		{"one byte too many", func(dst, src []byte) {
			copy(dst, src)
			dst[:len(dst)+1][len(dst)] ^= 1 // the buffer goes on past dst
		}, []string{"after it: 1 of ", " 16-byte chunks differ: +0x0 want "}},
	} {
		rng := rand.New(rand.NewPCG(7, 8))
		s := &stats{}
		for i := 0; i < 1000 && s.err == nil; i++ {
			moveCheck(s, rng, c.move)
		}
		if s.err == nil {
			t.Errorf("%s: moveCheck found nothing", c.name)
			continue
		}
		t.Logf("%s: %v", c.name, s.err)
		for _, w := range c.want {
			if !strings.Contains(s.err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, s.err, w)
			}
		}
		if strings.Count(s.err.Error(), " want ") != 1 {
			t.Errorf("%s: %q: not one chunk", c.name, s.err)
		}
	}
}

func TestFailKeepsTheFirstError(t *testing.T) {
	s := &stats{}
	s.fail("first %d", 1)
	s.fail("second")
	if s.err == nil || s.err.Error() != "first 1" || !s.failed() {
		t.Errorf("err = %v", s.err)
	}
}
