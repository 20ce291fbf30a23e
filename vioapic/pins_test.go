// Tests of the input side: edge and level semantics, Remote IRR, EOI by
// vector, polarity, unmasking, the storm guard, and a Sink that re-enters.

package vioapic

import (
	"fmt"
	"testing"
	"time"
)

// step is one action of a pin script and what it must fire.
type step struct {
	do   string // "line", "eoi", "eoireg", "rte", "refuse", "accept"
	pin  int
	arg  uint64 // line level (0/1), vector, or entry
	fire []int  // pins fired by this step, in order
	rirr uint32 // Remote IRR bits after the step
}

const (
	edge0x30  = 0x30
	level0x40 = RTELevel | 0x40
)

func TestPinScripts(t *testing.T) {
	scripts := []struct {
		name  string
		steps []step
		stats map[int]PinStats
	}{
		{"edge fires on rising edge only", []step{
			{do: "rte", pin: 1, arg: edge0x30},
			{do: "line", pin: 1, arg: 1, fire: []int{1}},
			{do: "line", pin: 1, arg: 1},
			{do: "line", pin: 1, arg: 0},
			{do: "line", pin: 1, arg: 0},
			{do: "line", pin: 1, arg: 1, fire: []int{1}},
			{do: "eoi", arg: 0x30},
		}, map[int]PinStats{1: {Fired: 2}}},
		{"masked edge is lost", []step{
			{do: "rte", pin: 2, arg: edge0x30 | RTEMasked},
			{do: "line", pin: 2, arg: 1},
			{do: "rte", pin: 2, arg: edge0x30},
			{do: "line", pin: 2, arg: 0},
			{do: "line", pin: 2, arg: 1, fire: []int{2}},
		}, map[int]PinStats{2: {Fired: 1, MaskedLost: 1}}},
		{"level: fire, Remote IRR, no re-fire, EOI re-delivers, deassert stops", []step{
			{do: "rte", pin: 3, arg: level0x40},
			{do: "line", pin: 3, arg: 1, fire: []int{3}, rirr: 1 << 3},
			{do: "line", pin: 3, arg: 1, rirr: 1 << 3},
			{do: "eoi", arg: 0x40, fire: []int{3}, rirr: 1 << 3},
			{do: "line", pin: 3, arg: 0, rirr: 1 << 3},
			{do: "eoi", arg: 0x40},
			{do: "eoi", arg: 0x40},
			{do: "line", pin: 3, arg: 1, fire: []int{3}, rirr: 1 << 3},
		}, map[int]PinStats{3: {Fired: 3, Coalesced: 1}}},
		{"EOI register acts like EOI", []step{
			{do: "rte", pin: 3, arg: level0x40},
			{do: "line", pin: 3, arg: 1, fire: []int{3}, rirr: 1 << 3},
			{do: "eoireg", arg: 0x40, fire: []int{3}, rirr: 1 << 3},
			{do: "line", pin: 3, arg: 0, rirr: 1 << 3},
			{do: "eoireg", arg: 0x40},
		}, nil},
		{"EOI by vector touches only matching entries", []step{
			{do: "rte", pin: 4, arg: RTELevel | 0x41},
			{do: "rte", pin: 5, arg: RTELevel | 0x42},
			{do: "rte", pin: 6, arg: RTELevel | 0x41},
			{do: "line", pin: 4, arg: 1, fire: []int{4}, rirr: 1 << 4},
			{do: "line", pin: 5, arg: 1, fire: []int{5}, rirr: 1<<4 | 1<<5},
			{do: "line", pin: 6, arg: 1, fire: []int{6}, rirr: 1<<4 | 1<<5 | 1<<6},
			{do: "line", pin: 4, arg: 0, rirr: 1<<4 | 1<<5 | 1<<6},
			{do: "eoi", arg: 0x43, rirr: 1<<4 | 1<<5 | 1<<6},
			{do: "eoi", arg: 0x41, fire: []int{6}, rirr: 1<<5 | 1<<6},
			{do: "line", pin: 5, arg: 0, rirr: 1<<5 | 1<<6},
			{do: "eoi", arg: 0x42, rirr: 1 << 6},
		}, nil},
		{"active low edge", []step{
			{do: "rte", pin: 7, arg: edge0x30 | RTEActiveLow},
			{do: "line", pin: 7, arg: 1},
			{do: "line", pin: 7, arg: 0, fire: []int{7}},
			{do: "line", pin: 7, arg: 0},
			{do: "line", pin: 7, arg: 1},
		}, nil},
		{"active low level asserted by a low line", []step{
			{do: "line", pin: 8, arg: 1},
			{do: "rte", pin: 8, arg: level0x40 | RTEActiveLow},
			{do: "line", pin: 8, arg: 0, fire: []int{8}, rirr: 1 << 8},
			{do: "line", pin: 8, arg: 1, rirr: 1 << 8},
			{do: "eoi", arg: 0x40},
		}, nil},
		{"active low level with the line low fires on unmask", []step{
			{do: "rte", pin: 8, arg: level0x40 | RTEActiveLow, fire: []int{8}, rirr: 1 << 8},
		}, nil},
		{"unmask of asserted level fires", []step{
			{do: "rte", pin: 9, arg: level0x40 | RTEMasked},
			{do: "line", pin: 9, arg: 1},
			{do: "eoi", arg: 0x40},
			{do: "rte", pin: 9, arg: level0x40, fire: []int{9}, rirr: 1 << 9},
			{do: "rte", pin: 9, arg: level0x40, rirr: 1 << 9},
		}, map[int]PinStats{9: {Fired: 1}}},
		{"masking keeps Remote IRR; EOI while masked does not fire", []step{
			{do: "rte", pin: 9, arg: level0x40},
			{do: "line", pin: 9, arg: 1, fire: []int{9}, rirr: 1 << 9},
			{do: "rte", pin: 9, arg: level0x40 | RTEMasked, rirr: 1 << 9},
			{do: "eoi", arg: 0x40},
			{do: "rte", pin: 9, arg: level0x40, fire: []int{9}, rirr: 1 << 9},
		}, nil},
		{"trigger change to edge clears Remote IRR", []step{
			{do: "rte", pin: 10, arg: level0x40},
			{do: "line", pin: 10, arg: 1, fire: []int{10}, rirr: 1 << 10},
			{do: "rte", pin: 10, arg: 0x40 | RTEMasked},
			{do: "rte", pin: 10, arg: level0x40 | RTEMasked},
			{do: "rte", pin: 10, arg: level0x40, fire: []int{10}, rirr: 1 << 10},
		}, nil},
		{"undelivered level leaves Remote IRR clear, retried on next assert", []step{
			{do: "refuse"},
			{do: "rte", pin: 11, arg: level0x40},
			{do: "line", pin: 11, arg: 1, fire: []int{11}},
			{do: "accept"},
			{do: "line", pin: 11, arg: 1, fire: []int{11}, rirr: 1 << 11},
		}, map[int]PinStats{11: {Fired: 2, Undelivered: 1}}},
		{"out-of-range pins ignored", []step{
			{do: "line", pin: -1, arg: 1},
			{do: "line", pin: Pins, arg: 1},
		}, nil},
	}
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			a, s := newIOAPIC(t)
			for i, st := range sc.steps {
				switch st.do {
				case "line":
					a.SetLine(st.pin, st.arg != 0)
				case "eoi":
					a.EOI(uint8(st.arg))
				case "eoireg":
					w32(a, RegEOI, uint32(st.arg))
				case "rte":
					setRTE(a, st.pin, st.arg)
				case "refuse":
					s.refuse.Store(true)
				case "accept":
					s.refuse.Store(false)
				}
				if got := s.take(); !equal(got, st.fire) {
					t.Fatalf("step %d %+v: fired %v, want %v", i, st, got, st.fire)
				}
				if got := a.Snapshot().RemoteIRR; got != st.rirr {
					t.Fatalf("step %d %+v: Remote IRR %#x, want %#x", i, st, got, st.rirr)
				}
			}
			snap := a.Snapshot()
			for p, want := range sc.stats {
				if snap.Pins[p] != want {
					t.Errorf("pin %d stats %+v, want %+v", p, snap.Pins[p], want)
				}
			}
		})
	}
}

// TestFiredEntry checks that the Sink gets the entry as programmed.
func TestFiredEntry(t *testing.T) {
	a, s := newIOAPIC(t)
	e := uint64(0x05000000_00000931) // lowest priority, logical, vector 0x31
	setRTE(a, 12, e)
	a.SetLine(12, true)
	if len(s.fires) != 1 || s.fires[0] != (fire{12, e}) {
		t.Fatalf("fires %+v", s.fires)
	}
	if m := DecodeRTE(s.fires[0].rte); m.Vector != 0x31 || m.Dest != 5 {
		t.Fatalf("decoded %+v", m)
	}
}

// TestStormBound: a guest that EOIs a still-asserted level interrupt
// forever gets StormLimit-1 immediate re-fires, then one deferred by
// StormDelay, and so on.
func TestStormBound(t *testing.T) {
	s := &countSink{}
	a := New(0, s)
	f := &fakeSched{}
	a.SetScheduler(f.schedule)
	setRTE(a, 13, level0x40)
	a.SetLine(13, true)
	for range StormLimit - 1 {
		a.EOI(0x40)
	}
	if n := s.n.Load(); n != StormLimit {
		t.Fatalf("fires after %d EOIs: %d", StormLimit-1, n)
	}
	a.EOI(0x40) // the StormLimit-th successive re-fire is deferred
	a.EOI(0x40) // a stray EOI does not bypass the delay
	if n := s.n.Load(); n != StormLimit {
		t.Fatalf("storm EOI fired at once: %d", n)
	}
	st := a.Snapshot()
	if st.RemoteIRR != 0 || st.Pins[13].Deferred != 1 || len(f.fs) != 1 || f.ds[0] != StormDelay {
		t.Fatalf("after storm: RIRR %#x deferred %d scheduled %d", st.RemoteIRR, st.Pins[13].Deferred, len(f.fs))
	}
	f.fs[0]() // the delay passes
	if n := s.n.Load(); n != StormLimit+1 || a.Snapshot().RemoteIRR != 1<<13 {
		t.Fatalf("deferred re-fire: %d fires, RIRR %#x", n, a.Snapshot().RemoteIRR)
	}
	// The count restarts: another StormLimit-1 immediate re-fires.
	for range StormLimit - 1 {
		a.EOI(0x40)
	}
	if n := s.n.Load(); n != 2*StormLimit || len(f.fs) != 1 {
		t.Fatalf("second run: %d fires, %d scheduled", n, len(f.fs))
	}
	// A deassert before the EOI resets the count.
	a.SetLine(13, false)
	a.EOI(0x40)
	a.SetLine(13, true)
	for range StormLimit - 1 {
		a.EOI(0x40)
	}
	if n := s.n.Load(); n != 3*StormLimit || len(f.fs) != 1 {
		t.Fatalf("after deassert: %d fires, %d scheduled", n, len(f.fs))
	}
	a.EOI(0x40)
	if n := s.n.Load(); n != 3*StormLimit || len(f.fs) != 2 {
		t.Fatalf("third storm: %d fires, %d scheduled", n, len(f.fs))
	}
}

// TestStormDefaultScheduler runs the deferred re-fire on the real timer.
func TestStormDefaultScheduler(t *testing.T) {
	s := &countSink{}
	a := New(0, s)
	setRTE(a, 0, level0x40)
	a.SetLine(0, true)
	for range StormLimit {
		a.EOI(0x40)
	}
	want := int64(StormLimit)
	deadline := time.Now().Add(5 * time.Second)
	for s.n.Load() != want+1 {
		if time.Now().After(deadline) {
			t.Fatalf("deferred re-fire never came: %d fires", s.n.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// reentrantSink EOIs from inside Fire, as a LAPIC whose guest handles the
// interrupt synchronously might; it must not deadlock.
type reentrantSink struct {
	a     *IOAPIC
	depth int
	fires int
}

func (s *reentrantSink) Fire(pin int, rte uint64) bool {
	s.fires++
	if s.depth < 3 {
		s.depth++
		s.a.EOI(uint8(rte))
		s.a.SetLine(pin, true)
		_ = s.a.Snapshot()
	}
	return true
}

func TestReentrantSink(t *testing.T) {
	s := &reentrantSink{}
	a := New(0, s)
	s.a = a
	setRTE(a, 0, level0x40)
	a.SetLine(0, true)
	// Each Fire EOIs before returning; the EOI re-fires (Remote IRR was set
	// before Fire), nesting three deep.
	if s.fires != 4 || a.Snapshot().RemoteIRR != 1 {
		t.Fatalf("fires %d RIRR %#x", s.fires, a.Snapshot().RemoteIRR)
	}
}

// TestUndeliveredAfterRefire: a Fire that returns false does not clear the
// Remote IRR of a later fire of the same pin.
func TestUndeliveredAfterRefire(t *testing.T) {
	var a *IOAPIC
	calls := 0
	sink := sinkFunc(func(pin int, rte uint64) bool {
		calls++
		if calls == 1 {
			// Inside the first fire: an EOI re-fires the pin (accepted).
			a.EOI(uint8(rte))
			return false
		}
		return true
	})
	a = New(0, sink)
	setRTE(a, 0, level0x40)
	a.SetLine(0, true)
	if calls != 2 || a.Snapshot().RemoteIRR != 1 {
		t.Fatalf("calls %d RIRR %#x", calls, a.Snapshot().RemoteIRR)
	}
}

type sinkFunc func(pin int, rte uint64) bool

func (f sinkFunc) Fire(pin int, rte uint64) bool { return f(pin, rte) }

func TestReset(t *testing.T) {
	a, s := newIOAPIC(t)
	writeReg(a, IndexID, 0x0A000000)
	setRTE(a, 0, edge0x30)
	a.SetLine(0, true)
	s.take()
	a.Reset()
	st := a.Snapshot()
	if st.ID != 0 || st.RTE[0] != RTEMasked || st.Lines != 1 || st.Pins[0].Fired != 1 {
		t.Fatalf("after reset: %+v", st)
	}
}

func ExampleIOAPIC() {
	sink := sinkFunc(func(pin int, rte uint64) bool {
		m := DecodeRTE(rte)
		fmt.Printf("pin %d: vector %#x to %d, level %v\n", pin, m.Vector, m.Dest, m.Trigger == 1)
		return true
	})
	a := New(0, sink)
	// The guest routes pin 4 to vector 0x24 on APIC 1, level-triggered.
	writeReg(a, IndexRTE+2*4+1, 1<<24)
	writeReg(a, IndexRTE+2*4, RTELevel|0x24)
	a.SetLine(4, true) // the device raises its line
	a.EOI(0x24)        // the guest's handler EOIs without quieting it
	a.SetLine(4, false)
	a.EOI(0x24)
	// Output:
	// pin 4: vector 0x24 to 1, level true
	// pin 4: vector 0x24 to 1, level true
}
