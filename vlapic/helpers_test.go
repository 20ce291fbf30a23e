// Test helpers: a fake Clock, a Sink that records notifications, and bus
// set-up and register shortcuts shared by the tests, fuzz targets and
// benchmarks.

package vlapic

import (
	"encoding/binary"
	"flag"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeClock is a Clock that moves only when told; its TSC runs at 1 GHz
// from tscBase, so TSC == now + tscBase.
type fakeClock struct {
	now     atomic.Int64
	tscBase uint64
}

func (c *fakeClock) Now() int64       { return c.now.Load() }
func (c *fakeClock) TSC() uint64      { return uint64(c.now.Load()) + c.tscBase }
func (c *fakeClock) advance(ns int64) { c.now.Add(ns) }

// recSink records every Notify call.
type recSink struct {
	mu    sync.Mutex
	calls []int
}

func (s *recSink) Notify(cpu int) {
	s.mu.Lock()
	s.calls = append(s.calls, cpu)
	s.mu.Unlock()
}

// take returns the notified CPUs, sorted, and forgets them.
func (s *recSink) take() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	slices.Sort(c)
	return c
}

// countSink counts Notify calls without allocating.
type countSink struct{ n atomic.Int64 }

func (s *countSink) Notify(int) { s.n.Add(1) }

// avicFlag runs the tests and fuzz targets that build their Bus with
// testOptions on the AVIC path: go test ./vlapic/ -args -avic.
var avicFlag = flag.Bool("avic", false, "build test buses with Options.AVIC (AVIC-style delivery)")

// testOptions is o with the delivery path the test run asks for.
func testOptions(o Options) Options {
	o.AVIC = *avicFlag
	return o
}

type testBus struct {
	*Bus
	clock *fakeClock
	sink  *recSink
}

// newBus returns n software-enabled LAPICs, in x2APIC mode if x2.
func newBus(t testing.TB, n int, x2 bool) *testBus {
	t.Helper()
	c := &fakeClock{tscBase: 1_000_000}
	s := &recSink{}
	b := NewBus(n, c, s, testOptions(Options{X2APIC: true}))
	for i := range n {
		a := b.LAPIC(i)
		if x2 {
			if err := a.SetBase(a.Base() | BaseEXTD); err != nil {
				t.Fatal(err)
			}
		}
		wr(t, a, RegSVR, 0x1FF)
	}
	s.take()
	return &testBus{b, c, s}
}

// wr writes a 32-bit register through the interface of the LAPIC's mode.
func wr(t testing.TB, a *LAPIC, r Register, v uint32) Effect {
	t.Helper()
	if a.Mode() == ModeX2APIC {
		eff, err := a.WriteMSR(MSRX2APICFirst+uint32(r), uint64(v))
		if err != nil {
			t.Fatalf("wrmsr %#x <- %#x: %v", MSRX2APICFirst+uint32(r), v, err)
		}
		return eff
	}
	var d [4]byte
	binary.LittleEndian.PutUint32(d[:], v)
	return a.WriteMMIO(uint64(r)<<4, d[:])
}

// rd reads a 32-bit register through the interface of the LAPIC's mode.
func rd(t testing.TB, a *LAPIC, r Register) uint32 {
	t.Helper()
	if a.Mode() == ModeX2APIC {
		v, err := a.ReadMSR(MSRX2APICFirst + uint32(r))
		if err != nil {
			t.Fatalf("rdmsr %#x: %v", MSRX2APICFirst+uint32(r), err)
		}
		return uint32(v)
	}
	var d [4]byte
	a.ReadMMIO(uint64(r)<<4, d[:])
	return binary.LittleEndian.Uint32(d[:])
}

// sendICR writes the ICR of a (ICR2 then ICR in xAPIC mode).
func sendICR(t testing.TB, a *LAPIC, m Message) Effect {
	t.Helper()
	x2 := a.Mode() == ModeX2APIC
	icr := EncodeICR(m, x2)
	if x2 {
		eff, err := a.WriteMSR(MSRX2APICFirst+uint32(RegICR), icr)
		if err != nil {
			t.Fatalf("ICR write %#x: %v", icr, err)
		}
		return eff
	}
	wr(t, a, RegICR2, uint32(icr>>32))
	return wr(t, a, RegICR, uint32(icr))
}

// withIRR lists the CPUs whose IRR holds vector v.
func (b *testBus) withIRR(v uint8) []int {
	var cpus []int
	for i := range b.Len() {
		s := b.LAPIC(i).Snapshot()
		if s.IRR[v/32]&(1<<(v%32)) != 0 {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// clearIRR acknowledges and EOIs everything pending on every LAPIC.
func (b *testBus) drain() {
	for i := range b.Len() {
		a := b.LAPIC(i)
		for {
			if _, ok := a.Acknowledge(); !ok {
				break
			}
			a.EOI()
		}
	}
}

func fixed(v uint8, dm DestMode, dest uint32) Message {
	return Message{Vector: v, Delivery: Fixed, DestMode: dm, Dest: dest, Source: -1}
}
