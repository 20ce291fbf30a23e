// Test helpers: a Sink that records fires, a fake scheduler, and register
// shortcuts shared by the tests, fuzz target and benchmark.

package vioapic

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fire is one recorded Sink.Fire call.
type fire struct {
	pin int
	rte uint64
}

// recSink records fires and answers accept (true unless refuse is set).
type recSink struct {
	mu     sync.Mutex
	fires  []fire
	refuse atomic.Bool
}

func (s *recSink) Fire(pin int, rte uint64) bool {
	s.mu.Lock()
	s.fires = append(s.fires, fire{pin, rte})
	s.mu.Unlock()
	return !s.refuse.Load()
}

// take returns the pins fired since the last take, in order.
func (s *recSink) take() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pins []int
	for _, f := range s.fires {
		pins = append(pins, f.pin)
	}
	s.fires = nil
	return pins
}

// countSink counts fires without allocating.
type countSink struct{ n atomic.Int64 }

func (s *countSink) Fire(int, uint64) bool { s.n.Add(1); return true }

// fakeSched records scheduled functions instead of running them.
type fakeSched struct {
	mu sync.Mutex
	fs []func()
	ds []time.Duration
}

func (f *fakeSched) schedule(d time.Duration, fn func()) {
	f.mu.Lock()
	f.fs = append(f.fs, fn)
	f.ds = append(f.ds, d)
	f.mu.Unlock()
}

func newIOAPIC(t testing.TB) (*IOAPIC, *recSink) {
	t.Helper()
	s := &recSink{}
	return New(0, s), s
}

func w32(a *IOAPIC, off uint64, v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	a.WriteMMIO(off, b[:])
}

func r32(a *IOAPIC, off uint64) uint32 {
	var b [4]byte
	a.ReadMMIO(off, b[:])
	return binary.LittleEndian.Uint32(b[:])
}

// writeReg writes indirect register i through IOREGSEL/IOWIN.
func writeReg(a *IOAPIC, i uint8, v uint32) {
	w32(a, RegSel, uint32(i))
	w32(a, RegWin, v)
}

// readReg reads indirect register i through IOREGSEL/IOWIN.
func readReg(a *IOAPIC, i uint8) uint32 {
	w32(a, RegSel, uint32(i))
	return r32(a, RegWin)
}

// setRTE writes pin's entry, high dword first, as Linux does.
func setRTE(a *IOAPIC, pin int, e uint64) {
	writeReg(a, uint8(IndexRTE+2*pin+1), uint32(e>>32))
	writeReg(a, uint8(IndexRTE+2*pin), uint32(e))
}

func getRTE(a *IOAPIC, pin int) uint64 {
	return uint64(readReg(a, uint8(IndexRTE+2*pin+1)))<<32 | uint64(readReg(a, uint8(IndexRTE+2*pin)))
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
