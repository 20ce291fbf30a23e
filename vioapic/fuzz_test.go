// Fuzz target: random sequences of IOREGSEL/IOWIN and other page accesses,
// line changes, EOIs and deferred re-fires, checked against invariants.

package vioapic

import (
	"github.com/govmm/govmm/internal/fuzzops"
	"testing"
	"time"
)

// fuzzSink accepts or refuses by a pattern and counts calls.
type fuzzSink struct {
	calls  uint64
	refuse uint8
}

func (s *fuzzSink) Fire(pin int, rte uint64) bool {
	s.calls++
	if pin < 0 || pin >= Pins {
		panic("pin out of range")
	}
	return (s.calls+uint64(rte))&uint64(s.refuse) == 0
}

var fuzzSizes = []int{4, 4, 4, 1, 2, 8, 3, 0}

func FuzzIOAPICWindow(f *testing.F) {
	f.Add([]byte{0, 0x10, 1, 0x10, 0, 0, 0, 0, 3, 0, 1, 4, 0x40})
	f.Add([]byte{0, 0x11, 1, 0x40, 0x80, 0, 0, 3, 0, 1, 4, 0x40, 5, 0x40, 3, 0, 0})
	f.Add([]byte{0, 0x2F, 2, 0x0F, 3, 23, 1, 6, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		o := fuzzops.New(in)
		s := &fuzzSink{refuse: o.U8() & 3}
		a := New(o.U8(), s)
		var deferred []func()
		a.SetScheduler(func(_ time.Duration, fn func()) { deferred = append(deferred, fn) })
		buf := make([]byte, 8)
		for n := 0; o.More() && n < 512; n++ {
			switch o.U8() % 8 {
			case 0: // IOREGSEL
				w32(a, RegSel, uint32(o.U8()))
			case 1: // IOWIN write
				v := o.U32()
				if o.U8()&1 == 0 {
					v &^= RTEMasked // mostly unmasked, to reach the firing paths
				}
				w32(a, RegWin, v)
			case 2: // IOWIN read, any size
				a.ReadMMIO(RegWin, buf[:fuzzSizes[o.U8()%8]])
			case 3: // line
				a.SetLine(int(o.U8()%(Pins+2))-1, o.U8()&1 != 0)
			case 4: // EOI broadcast
				a.EOI(o.U8())
			case 5: // EOI register
				w32(a, RegEOI, uint32(o.U8()))
			case 6: // any offset, any size
				off, sz := uint64(o.U8())<<2, fuzzSizes[o.U8()%8]
				if o.U8()&1 == 0 {
					a.WriteMMIO(off, buf[:sz])
				} else {
					a.ReadMMIO(off, buf[:sz])
				}
			case 7: // the storm delay passes
				d := deferred
				deferred = nil
				for _, fn := range d {
					fn()
				}
			}
			checkInvariants(t, a, s)
		}
	})
}

func checkInvariants(t *testing.T, a *IOAPIC, s *fuzzSink) {
	t.Helper()
	st := a.Snapshot()
	if st.Version != 0x00170020 || st.ID > 0xF || st.Arbitration != uint32(st.ID)<<24 {
		t.Fatalf("registers: %+v", st)
	}
	var fired uint64
	for p := range Pins {
		e := st.RTE[p]
		if e&RTEDeliveryStatus != 0 {
			t.Fatalf("pin %d: delivery status set: %#x", p, e)
		}
		if e&RTERemoteIRR != 0 && e&RTELevel == 0 {
			t.Fatalf("pin %d: Remote IRR on an edge entry: %#x", p, e)
		}
		if (st.RemoteIRR>>p&1 != 0) != (e&RTERemoteIRR != 0) {
			t.Fatalf("pin %d: RemoteIRR bitmap disagrees", p)
		}
		ps := st.Pins[p]
		if ps.Undelivered > ps.Fired {
			t.Fatalf("pin %d: %+v", p, ps)
		}
		fired += ps.Fired
	}
	if fired != s.calls {
		t.Fatalf("Fired counters %d, sink calls %d", fired, s.calls)
	}
	if readReg(a, IndexVersion) != Version {
		t.Fatal("version register changed")
	}
	w32(a, RegSel, uint32(st.IOREGSEL)) // leave the guest's selection as it was
}
