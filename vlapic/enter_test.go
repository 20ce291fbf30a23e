package vlapic

import "testing"

// TestEnter: one Enter is the Tick, TakePending, CR8 and TimerDeadline
// the loop used to make one by one: a timer that came due is in the same
// look (and notifies no one: the caller takes it), the events are taken
// once, CR8 is TPR's class and the deadline the next one.
func TestEnter(t *testing.T) {
	b, a := timerBus(t)
	wr(t, a, RegTPR, 0x25)
	wr(t, a, RegLVTTimer, 0x30|1<<17) // periodic
	wr(t, a, RegTimerDCR, 0xB)        // divide by 1: 1 count = 1 ns at 1 GHz
	wr(t, a, RegTimerICR, 500_000)    // above KVM's 200 µs floor for periodic timers
	b.sink.take()
	e := a.Enter()
	if e.Fixed || !e.TimerArmed || e.TimerAt != 500_000 || e.CR8 != 2 {
		t.Fatalf("before the deadline: %+v, want nothing pending, timer due at 500000, CR8 2", e)
	}
	b.clock.advance(500_000)
	e = a.Enter()
	if !e.Fixed || e.Vector != 0x30 || !e.TimerArmed || e.TimerAt != 1_000_000 {
		t.Fatalf("at the deadline: %+v, want vector 0x30 pending and the next period due at 1000000", e)
	}
	if n := b.sink.take(); len(n) != 0 {
		t.Errorf("Enter's own tick notified %v: the caller is the one to take the vector", n)
	}
	b.Deliver(Message{Delivery: NMI, Dest: 0, Source: -1})
	if e = a.Enter(); e.NMIs != 1 {
		t.Fatalf("NMI not taken: %+v", e)
	}
	if e = a.Enter(); e.NMIs != 0 {
		t.Fatalf("NMI taken twice: %+v", e)
	}
	// The same as the separate calls give.
	p := a.TakePending()
	at, armed := a.TimerDeadline()
	if e.Pending != p || e.CR8 != a.CR8() || e.TimerAt != at || e.TimerArmed != armed {
		t.Errorf("Enter %+v; separately: %+v, CR8 %d, deadline %d %v", e, p, a.CR8(), at, armed)
	}
}

// TestSMIAccepted: an SMI message is accepted, notifies the CPU and is
// taken once as Events.SMI, which wakes a halted CPU whatever IF is (a
// CPU in HLT leaves it for SMM); a disabled LAPIC accepts none.
func TestSMIAccepted(t *testing.T) {
	b, a := timerBus(t)
	b.sink.take()
	b.Deliver(Message{Delivery: SMI, Dest: 0, Source: -1})
	if n := b.sink.take(); len(n) != 1 {
		t.Errorf("an SMI notified %v, want CPU 0 once", n)
	}
	e := a.Enter()
	if !e.SMI || !e.Work() || !e.Wakes(false) {
		t.Fatalf("SMI not taken, or not work that wakes HLT with IF=0: %+v", e)
	}
	if e = a.Enter(); e.SMI {
		t.Fatalf("SMI taken twice: %+v", e)
	}
}

// TestEOISettled: an EOI (x2APIC MSR or xAPIC page) says it left the
// LAPIC settled only when nothing is requested (a vector held back by the
// one in service is), no event is latched and the timer is stopped; no
// other write says so.
func TestEOISettled(t *testing.T) {
	for _, x2 := range []bool{true, false} {
		t.Run(map[bool]string{true: "x2apic", false: "xapic"}[x2], func(t *testing.T) { testEOISettled(t, x2) })
	}
}

func testEOISettled(t *testing.T, x2 bool) {
	b := newBus(t, 1, x2)
	a := b.LAPIC(0)
	fixed := func(v uint8) { b.Deliver(Message{Delivery: Fixed, Vector: v, Dest: 0, Source: -1}) }
	ack := func(want uint8) {
		t.Helper()
		if v, ok := a.Acknowledge(); !ok || v != want {
			t.Fatalf("acknowledged %#x %v, want %#x", v, ok, want)
		}
	}
	fixed(0x40)
	fixed(0x30)
	ack(0x40)
	if wr(t, a, RegEOI, 0).Settled {
		t.Error("an EOI with 0x30 still requested said settled")
	}
	ack(0x30)
	if !wr(t, a, RegEOI, 0).Settled {
		t.Error("an EOI that left nothing said not settled")
	}
	if wr(t, a, RegTPR, 0x10).Settled {
		t.Error("a TPR write said settled")
	}
	fixed(0x41)
	ack(0x41)
	b.Deliver(Message{Delivery: NMI, Dest: 0, Source: -1})
	if wr(t, a, RegEOI, 0).Settled {
		t.Error("an EOI with an NMI latched said settled")
	}
	a.TakePending()
	wr(t, a, RegLVTTimer, 0x31)
	wr(t, a, RegTimerICR, 1_000_000)
	fixed(0x42)
	ack(0x42)
	if wr(t, a, RegEOI, 0).Settled {
		t.Error("an EOI with the timer armed said settled")
	}
}
