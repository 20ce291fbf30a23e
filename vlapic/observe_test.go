package vlapic

import (
	"fmt"
	"sync"
	"testing"
)

// recObs records every event the LAPICs report. Its traces are 7 for a
// directed IPI and 9 for one by shorthand.
type recObs struct {
	mu  sync.Mutex
	got []string
}

func (o *recObs) add(f string, a ...any) {
	o.mu.Lock()
	o.got = append(o.got, fmt.Sprintf(f, a...))
	o.mu.Unlock()
}

func (o *recObs) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	g := o.got
	o.got = nil
	return g
}

func (o *recObs) Sending(cpu int, m Message, x2 bool) Trace {
	o.add("sending %d %#x x2=%v", cpu, m.Vector, x2)
	if m.Shorthand != NoShorthand {
		return 9
	}
	return 7
}
func (o *recObs) Sent(cpu int, t Trace, n int)       { o.add("sent %d t%d to %d", cpu, t, n) }
func (o *recObs) Accepted(cpu int, v uint8, t Trace) { o.add("accepted %d %#x t%d", cpu, v, t) }
func (o *recObs) Refused(cpu int, v uint8)           { o.add("refused %d %#x", cpu, v) }
func (o *recObs) Acknowledged(cpu int, v uint8)      { o.add("acknowledged %d %#x", cpu, v) }
func (o *recObs) Unacknowledged(cpu int, v uint8)    { o.add("unacknowledged %d %#x", cpu, v) }
func (o *recObs) Ended(cpu int, v uint8, w bool)     { o.add("ended %d %#x write=%v", cpu, v, w) }
func (o *recObs) Reset(cpu int)                      { o.add("reset %d", cpu) }
func (o *recObs) Injected(int, uint8)                {}
func (o *recObs) Withdrawn(int, uint8)               {}
func (o *recObs) ExitFor(int, uint8, ExitReason)     {}

func sameList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: observed %v, want %v", what, got, want)
	}
}

// TestObserverEvents: the LAPICs report an IPI's send, its acceptance
// with the sender's trace, its acknowledgement, a withdrawal, its end (by
// an EOI write or a PV EOI) and INIT, at the moment each happens; an
// untraced message (a device's) is not reported accepted. On the plain
// path and the AVIC one alike.
func TestObserverEvents(t *testing.T) {
	for _, avic := range []bool{false, true} {
		t.Run(fmt.Sprint("avic=", avic), func(t *testing.T) {
			o := &recObs{}
			b := NewBus(2, &fakeClock{}, nil, Options{X2APIC: true, AVIC: avic, Observer: o})
			for i := range 2 {
				a := b.LAPIC(i)
				if err := a.SetBase(a.Base() | BaseEXTD); err != nil {
					t.Fatal(err)
				}
				wr(t, a, RegSVR, 0x1FF)
			}
			o.take()
			src, dst := b.LAPIC(0), b.LAPIC(1)
			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegICR), 1<<32|0x51); err != nil {
				t.Fatal(err)
			}
			sameList(t, "send", o.take(), "sending 0 0x51 x2=true", "accepted 1 0x51 t7", "sent 0 t7 to 1")
			if ack := dst.AcknowledgePV(); !ack.OK || ack.Vector != 0x51 {
				t.Fatalf("acknowledge: %+v", ack)
			}
			dst.Unacknowledge(0x51)
			dst.AcknowledgePV()
			sameList(t, "acknowledged, withdrawn, again", o.take(), "acknowledged 1 0x51", "unacknowledged 1 0x51", "acknowledged 1 0x51")
			wr(t, dst, RegEOI, 0)
			sameList(t, "EOI write", o.take(), "ended 1 0x51 write=true")
			wr(t, dst, RegEOI, 0)
			sameList(t, "an EOI with nothing in service", o.take())

			if _, err := src.WriteMSR(MSRX2APICFirst+uint32(RegSelfIPI), 0x52); err != nil {
				t.Fatal(err)
			}
			sameList(t, "self", o.take(), "sending 0 0x52 x2=true", "accepted 0 0x52 t9", "sent 0 t9 to 1")
			src.AcknowledgePV()
			src.EOI()
			sameList(t, "PV EOI", o.take(), "acknowledged 0 0x52", "ended 0 0x52 write=false")

			b.Deliver(Message{Vector: 0x60, Delivery: Fixed, Dest: 1, Assert: true, Source: -1, Trace: 4})
			b.Deliver(Message{Vector: 0x61, Delivery: Fixed, Dest: 1, Assert: true, Source: -1})
			sameList(t, "traced from outside, untraced", o.take(), "accepted 1 0x60 t4")
			dst.InitReset()
			sameList(t, "INIT", o.take(), "reset 1")
		})
	}
}
