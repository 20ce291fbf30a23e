// Tests of AVIC-style delivery: the IRR backing page, its fold into IRR and
// what stays on the locked path.

package vlapic

import (
	"sync"
	"testing"
	"time"
)

// avicBus is newBus on the AVIC path whatever -avic says.
func avicBus(t testing.TB, n int) *testBus {
	t.Helper()
	c := &fakeClock{tscBase: 1_000_000}
	s := &recSink{}
	b := NewBus(n, c, s, Options{X2APIC: true, AVIC: true})
	for i := range n {
		a := b.LAPIC(i)
		must(t, a.SetBase(a.Base()|BaseEXTD))
		wr(t, a, RegSVR, 0x1FF)
	}
	s.take()
	return &testBus{b, c, s}
}

// drainOrder acknowledges and EOIs until nothing is pending and returns the
// vectors in the order they were taken.
func drainOrder(a *LAPIC) []uint8 {
	var got []uint8
	for {
		v, ok := a.Acknowledge()
		if !ok {
			return got
		}
		got = append(got, v)
		a.EOI()
	}
}

// TestAVICPostTakesNoTargetLock: a fixed edge interrupt reaches a target
// whose lock is held (its vCPU is busy in a register access); a level
// interrupt waits for the lock.
func TestAVICPostTakesNoTargetLock(t *testing.T) {
	b := avicBus(t, 2)
	a := b.LAPIC(1)
	a.mu.Lock()
	done := make(chan int)
	go func() { done <- b.Deliver(fixed(0x40, Physical, 1)) }()
	select {
	case n := <-done:
		if n != 1 {
			t.Errorf("posted edge interrupt: %d accepted, want 1", n)
		}
	case <-time.After(5 * time.Second):
		a.mu.Unlock()
		t.Fatal("edge delivery blocked on the target's lock")
	}
	level := make(chan int)
	go func() {
		level <- b.Deliver(Message{Vector: 0x50, Trigger: Level, Assert: true, Dest: 1, Source: -1})
	}()
	select {
	case <-level:
		t.Error("a level interrupt was delivered without the target's lock")
	case <-time.After(20 * time.Millisecond):
	}
	a.mu.Unlock()
	if n := <-level; n != 1 {
		t.Errorf("level interrupt: %d accepted, want 1", n)
	}
	if got := b.sink.take(); len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Errorf("notified %v, want [1 1]", got)
	}
	if got := drainOrder(a); len(got) != 2 || got[0] != 0x50 || got[1] != 0x40 {
		t.Errorf("took %#x, want [0x50 0x40]", got)
	}
}

// TestAVICConcurrentPosts: every legal vector posted twice, from many
// goroutines at once, lands in IRR once, is taken once, in priority order,
// and costs one notification (the second post of a set bit needs none).
func TestAVICConcurrentPosts(t *testing.T) {
	b := avicBus(t, 2)
	a := b.LAPIC(1)
	const workers = 16
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rep := range 2 {
				for v := 16 + (g+rep)%workers; v < 256; v += workers {
					if n := b.Deliver(fixed(uint8(v), Physical, 1)); n != 1 {
						t.Errorf("vector %#x: %d accepted", v, n)
					}
				}
			}
		}()
	}
	wg.Wait()
	s := a.Snapshot()
	want := [8]uint32{0xFFFF0000, ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}
	if s.Posted != want || s.IRR != want {
		t.Fatalf("before the fold: posted %08x IRR %08x, want every vector 16-255", s.Posted, s.IRR)
	}
	if n := len(b.sink.take()); n != 240 {
		t.Errorf("%d notifications for 240 vectors posted twice, want 240", n)
	}
	got := drainOrder(a)
	if len(got) != 240 {
		t.Fatalf("took %d vectors, want 240", len(got))
	}
	for i, v := range got {
		if v != uint8(255-i) {
			t.Fatalf("vector %d taken was %#x, want %#x (highest first)", i, v, 255-i)
		}
	}
	if s := a.Snapshot(); s.Posted != ([8]uint32{}) || s.IRR != ([8]uint32{}) {
		t.Errorf("after the drain: posted %08x IRR %08x", s.Posted, s.IRR)
	}
}

// TestAVICFoldOnce: looking twice folds once; a vector taken is gone, and
// posting it again brings it back exactly once.
func TestAVICFoldOnce(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	b.Deliver(fixed(0x40, Physical, 0))
	for range 2 {
		if v, ok := a.PendingVector(); !ok || v != 0x40 {
			t.Fatalf("pending %#x %v, want 0x40", v, ok)
		}
	}
	if v, ok := a.Acknowledge(); !ok || v != 0x40 {
		t.Fatalf("acknowledged %#x %v", v, ok)
	}
	if v, ok := a.PendingVector(); ok {
		t.Fatalf("%#x pending after the only one was taken", v)
	}
	a.EOI()
	if v, ok := a.Acknowledge(); ok {
		t.Fatalf("%#x taken twice", v)
	}
	b.Deliver(fixed(0x40, Physical, 0))
	if got := drainOrder(a); len(got) != 1 || got[0] != 0x40 {
		t.Errorf("after a second post took %#x, want [0x40]", got)
	}
}

// TestAVICPriorityAfterFold: posted vectors obey TPR and PPR like any
// requested vector once folded.
func TestAVICPriorityAfterFold(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	wr(t, a, RegTPR, 0x60)
	b.Deliver(fixed(0x50, Physical, 0))
	b.Deliver(fixed(0x80, Physical, 0))
	if v, ok := a.Acknowledge(); !ok || v != 0x80 {
		t.Fatalf("took %#x %v, want 0x80", v, ok)
	}
	b.Deliver(fixed(0x85, Physical, 0)) // same class as the one in service
	if v, ok := a.PendingVector(); ok {
		t.Fatalf("%#x pending under PPR 0x80", v)
	}
	b.Deliver(fixed(0x90, Physical, 0))
	if v, ok := a.PendingVector(); !ok || v != 0x90 {
		t.Fatalf("pending %#x %v, want 0x90 (nested)", v, ok)
	}
	if v, ok, pv := ackPV(a); !ok || v != 0x90 || pv {
		t.Errorf("AcknowledgePV %#x %v pv=%v, want 0x90 without PV EOI (0x85 is requested)", v, ok, pv)
	}
	a.EOI() // 0x90
	a.EOI() // 0x80
	if v, ok := a.Acknowledge(); !ok || v != 0x85 {
		t.Fatalf("took %#x %v, want 0x85", v, ok)
	}
	a.EOI()
	if v, ok := a.PendingVector(); ok {
		t.Fatalf("%#x pending under TPR 0x60", v)
	}
	wr(t, a, RegTPR, 0)
	if got := drainOrder(a); len(got) != 1 || got[0] != 0x50 {
		t.Errorf("after TPR 0 took %#x, want [0x50]", got)
	}
}

// TestAVICPVEOISeesPosted: a vector still on the backing page counts as
// "something else requested" for the PV EOI rule, like one in IRR.
func TestAVICPVEOISeesPosted(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	b.Deliver(fixed(0x40, Physical, 0))
	if v, ok, pv := ackPV(a); !ok || v != 0x40 || !pv {
		t.Fatalf("AcknowledgePV %#x %v pv=%v, want 0x40 with PV EOI", v, ok, pv)
	}
	a.EOI()
	b.Deliver(fixed(0x40, Physical, 0))
	b.Deliver(fixed(0x30, Physical, 0))
	if v, ok, pv := ackPV(a); !ok || v != 0x40 || pv {
		t.Errorf("AcknowledgePV %#x %v pv=%v, want 0x40 without PV EOI (0x30 was posted)", v, ok, pv)
	}
}

// TestAVICLevelAfterEdge: an edge interrupt posted before a level one of
// the same vector must not clear the level one's TMR bit at its fold: the
// IOAPIC still gets its EOI.
func TestAVICLevelAfterEdge(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	var eois []uint8
	b.SetEOIHandler(func(v uint8) { eois = append(eois, v) })
	b.Deliver(fixed(0x60, Physical, 0))
	b.Deliver(Message{Vector: 0x60, Trigger: Level, Assert: true, Dest: 0, Source: -1})
	if s := a.Snapshot(); s.TMR[3]&1 == 0 || s.Posted != ([8]uint32{}) {
		t.Fatalf("TMR %08x posted %08x: the level delivery did not fold first", s.TMR, s.Posted)
	}
	drainOrder(a)
	if len(eois) != 1 || eois[0] != 0x60 {
		t.Errorf("EOI handler got %#x, want [0x60]", eois)
	}
	// And an edge one after the level one is edge, as on the locked path.
	b.Deliver(Message{Vector: 0x61, Trigger: Level, Assert: true, Dest: 0, Source: -1})
	b.Deliver(fixed(0x61, Physical, 0))
	drainOrder(a)
	if len(eois) != 1 {
		t.Errorf("EOI handler got %#x: the later edge interrupt should have cleared TMR", eois)
	}
}

// TestAVICDisable: a software-disabled LAPIC refuses posts; vectors posted
// before the disable survive it (IRR is kept, as on the locked path); INIT
// and a hardware disable discard them.
func TestAVICDisable(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	b.Deliver(fixed(0x40, Physical, 0))
	wr(t, a, RegSVR, 0xFF)
	if n := b.Deliver(fixed(0x41, Physical, 0)); n != 0 {
		t.Errorf("software-disabled LAPIC accepted %d", n)
	}
	// A post that raced the disable (it passed the enable check first).
	a.pir.post(0x42)
	wr(t, a, RegSVR, 0x1FF)
	if got := drainOrder(a); len(got) != 1 || got[0] != 0x40 {
		t.Errorf("after re-enable took %#x, want [0x40]", got)
	}
	b.Deliver(fixed(0x43, Physical, 0))
	a.InitReset()
	wr(t, a, RegSVR, 0x1FF)
	if got := drainOrder(a); len(got) != 0 {
		t.Errorf("after INIT took %#x, want none", got)
	}
}

// TestAVICIRRRead: the guest's IRR read sees a posted vector.
func TestAVICIRRRead(t *testing.T) {
	b := avicBus(t, 1)
	a := b.LAPIC(0)
	b.Deliver(fixed(0x41, Physical, 0))
	if got := rd(t, a, RegIRR0+2); got != 1<<1 {
		t.Errorf("IRR2 = %#x, want 0x2", got)
	}
	if s := a.Snapshot(); s.Posted != ([8]uint32{}) {
		t.Errorf("posted %08x after the IRR read folded it", s.Posted)
	}
}

// TestAVICLockedKinds: NMI, INIT, SIPI, ExtINT, illegal vectors and
// self-IPIs all still arrive in AVIC mode.
func TestAVICLockedKinds(t *testing.T) {
	b := avicBus(t, 2)
	a := b.LAPIC(1)
	for _, d := range []DeliveryMode{NMI, INIT, StartUp, ExtINT} {
		b.Deliver(Message{Vector: 0x9, Delivery: d, Dest: 1, Assert: true, Source: -1})
	}
	if e := a.TakeEvents(); e.NMIs != 1 || !e.INIT || !e.SIPI || e.SIPIVector != 9 || !e.ExtINT {
		t.Errorf("events %+v", e)
	}
	wr(t, a, RegLVTError, 0x33)
	b.Deliver(fixed(0x5, Physical, 1))
	if v, ok := a.PendingVector(); !ok || v != 0x33 {
		t.Errorf("illegal vector: pending %#x %v, want the error LVT 0x33", v, ok)
	}
	drainOrder(a)
	if _, err := a.WriteMSR(msr(RegSelfIPI), 0x77); err != nil {
		t.Fatal(err)
	}
	if got := drainOrder(a); len(got) != 1 || got[0] != 0x77 {
		t.Errorf("self IPI: took %#x, want [0x77]", got)
	}
}

// TestAVICLowestPriority: arbitration picks the same CPU on both paths and
// the interrupt is posted to it.
func TestAVICLowestPriority(t *testing.T) {
	b := avicBus(t, 4)
	for i, tpr := range []uint32{0x40, 0x20, 0x10, 0x30} {
		wr(t, b.LAPIC(i), RegTPR, tpr)
	}
	m := Message{Vector: 0x70, Delivery: LowestPriority, DestMode: Logical, Dest: 0xF, Source: -1}
	if n := b.Deliver(m); n != 1 {
		t.Fatalf("%d accepted", n)
	}
	if got := b.withIRR(0x70); len(got) != 1 || got[0] != 2 {
		t.Errorf("IRR set on %v, want [2] (lowest TPR)", got)
	}
}

// TestAVICDeliverAllocs: posting allocates nothing.
func TestAVICDeliverAllocs(t *testing.T) {
	b := avicBus(t, 64)
	m := fixed(0x40, Logical, 0x1FFFF)
	if n := testing.AllocsPerRun(100, func() { b.Deliver(m); b.drain() }); n != 0 {
		t.Errorf("%v allocations per delivery", n)
	}
}
