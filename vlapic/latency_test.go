package vlapic

import (
	"fmt"
	"sync"
	"testing"
)

// latObs records every observation.
type latObs struct {
	mu  sync.Mutex
	got []string
}

func (o *latObs) Tag(m Message, x2apic bool) uint8 {
	if m.Shorthand != NoShorthand {
		return 9
	}
	return 7
}

func (o *latObs) Observe(s Stage, tag uint8, ns int64) {
	o.mu.Lock()
	o.got = append(o.got, fmt.Sprintf("%s/%d/%d", s, tag, ns))
	o.mu.Unlock()
}

func (o *latObs) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.got
	o.got = nil
	return g
}

func latBus(t *testing.T, avic bool) (*Bus, *fakeClock, *latObs) {
	t.Helper()
	c, o := &fakeClock{}, &latObs{}
	b := NewBus(2, c, nil, Options{X2APIC: true, AVIC: avic, Latency: o})
	for i := range 2 {
		a := b.LAPIC(i)
		if err := a.SetBase(a.Base() | BaseEXTD); err != nil {
			t.Fatal(err)
		}
		wr(t, a, RegSVR, 0x1FF)
	}
	return b, c, o
}

func sameList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: observed %v, want %v", what, got, want)
	}
}

// TestIPILatencyStages: an IPI is observed from its send, with the
// sender's tag, when the target accepts it, when the target acknowledges
// it and when it ends it; two sends of one vector
// before the acknowledgement coalesce and keep the first one's time; an
// injection taken back keeps its stamp; INIT forgets stamps. On the plain
// path and the AVIC one alike.
func TestIPILatencyStages(t *testing.T) {
	for _, avic := range []bool{false, true} {
		t.Run(fmt.Sprint("avic=", avic), func(t *testing.T) {
			b, c, o := latBus(t, avic)
			src, dst := b.LAPIC(0), b.LAPIC(1)
			c.now.Store(1000)
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x51); err != nil {
				t.Fatal(err)
			}
			sameList(t, "send", o.take(), "accepted/7/0")
			c.advance(130)
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x51); err != nil {
				t.Fatal(err)
			}
			sameList(t, "second send", o.take(), "accepted/7/0")
			c.advance(70) // 1200
			if ack := dst.AcknowledgePV(); !ack.OK || ack.Vector != 0x51 {
				t.Fatalf("acknowledge: %+v", ack)
			}
			sameList(t, "injection (coalesced: the first send's time)", o.take(), "injected/7/200")
			dst.Unacknowledge(0x51)
			c.advance(50)
			dst.AcknowledgePV()
			sameList(t, "injected again after a withdrawal", o.take(), "injected/7/250")
			c.advance(750)
			wr(t, dst, RegEOI, 0)
			sameList(t, "EOI", o.take(), "ended/7/1000")
			wr(t, dst, RegEOI, 0)
			sameList(t, "an EOI with nothing in service", o.take())

			// A self-IPI by shorthand carries the sender's tag for it.
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<18|0x52); err != nil {
				t.Fatal(err)
			}
			sameList(t, "self", o.take(), "accepted/9/0")

			// INIT empties IRR: the pending stamp must not survive.
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x53); err != nil {
				t.Fatal(err)
			}
			o.take()
			dst.InitReset()
			wr(t, dst, RegSVR, 0x1FF)
			c.advance(10)
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x53); err != nil {
				t.Fatal(err)
			}
			c.advance(5)
			dst.AcknowledgePV()
			sameList(t, "after INIT", o.take(), "accepted/7/0", "injected/7/5")

			// A Stamp made for another sender (PV send-IPI) is observed
			// likewise; an unstamped message (a device's) is not.
			s := b.Stamp(4)
			c.advance(20)
			b.Deliver(Message{Vector: 0x60, Delivery: Fixed, Dest: 1, Assert: true, Source: 0, Stamp: s})
			b.Deliver(Message{Vector: 0x61, Delivery: Fixed, Dest: 1, Assert: true, Source: -1})
			sameList(t, "PV stamp, device unstamped", o.take(), "accepted/4/20")
		})
	}
}

// TestNoLatencyObserver: without an observer nothing is stamped.
func TestNoLatencyObserver(t *testing.T) {
	b := newBus(t, 2, true)
	if b.LAPIC(0).lat != nil || b.Stamp(1) != 0 {
		t.Fatal("stamps kept without an observer")
	}
	eff, err := b.LAPIC(0).WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x51)
	if err != nil || eff.Msg.Stamp != 0 {
		t.Fatalf("stamp %v, err %v", eff.Msg.Stamp, err)
	}
}

func TestStamp(t *testing.T) {
	for _, at := range []int64{0, 1, 1 << 40} {
		s := MakeStamp(at, 0xAB)
		if s == 0 || s.At() != at || s.Tag() != 0xAB {
			t.Errorf("MakeStamp(%d, 0xAB) = %#x: at %d tag %#x", at, uint64(s), s.At(), s.Tag())
		}
	}
}
