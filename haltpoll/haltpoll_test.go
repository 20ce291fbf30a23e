package haltpoll

import (
	"testing"
	"time"
)

const us = time.Microsecond

// TestWindowFollowsKVM walks a window through KVM's rule (kvm_vcpu_halt):
// short halts grow it from GrowStart by Grow up to Max, a hit leaves it, a
// long idle or an invalid wake-up shrinks it.
func TestWindowFollowsKVM(t *testing.T) {
	w := New(KVM)
	steps := []struct {
		halted time.Duration
		valid  bool
		want   time.Duration
		why    string
	}{
		{5 * us, true, 10 * us, "a short halt with no window grows it to GrowStart"},
		{30 * us, true, 20 * us, "a halt longer than the window but below Max doubles it"},
		{30 * us, true, 40 * us, "again"},
		{30 * us, true, 40 * us, "a poll hit (halt within the window) leaves it"},
		{150 * us, true, 80 * us, "missed again: doubles"},
		{150 * us, true, 160 * us, "doubles"},
		{190 * us, true, 200 * us, "doubling stops at Max"},
		{199 * us, true, 200 * us, "a hit"},
		{time.Millisecond, true, 100 * us, "a long idle halves it (Shrink 2)"},
		{time.Millisecond, true, 50 * us, "halves again"},
		{10 * us, false, 25 * us, "a wake-up that is not one halves it"},
	}
	for i, s := range steps {
		w.Done(s.halted, s.valid)
		if got := w.Poll(); got != s.want {
			t.Fatalf("step %d (%s): window %v, want %v", i, s.why, got, s.want)
		}
	}
}

// TestShrinkZeroResets: Linux 6.1's default (halt_poll_ns_shrink 0) resets
// the window at a long idle; a window at 0 is not shrunk by a long idle
// and grows again from GrowStart.
func TestShrinkZeroResets(t *testing.T) {
	p := KVM
	p.Shrink = 0
	w := New(p)
	w.Done(5*us, true)
	w.Done(15*us, true)
	if w.Poll() != 20*us {
		t.Fatalf("window %v, want 20us", w.Poll())
	}
	w.Done(time.Second, true)
	if w.Poll() != 0 {
		t.Fatalf("a long idle left the window at %v, want 0", w.Poll())
	}
	w.Done(time.Second, true)
	if w.Poll() != 0 {
		t.Fatalf("a long idle with no window made it %v", w.Poll())
	}
	w.Done(us, true)
	if w.Poll() != 10*us {
		t.Fatalf("window %v after a short halt, want GrowStart", w.Poll())
	}
}

// TestOff: a zero Max (--halt-poll=0, or more vCPUs than host CPUs) never
// polls, whatever the halts; a lower Max clamps a window already open.
func TestOff(t *testing.T) {
	var zero Window
	zero.Done(us, true)
	if zero.Poll() != 0 {
		t.Fatalf("the zero Window polls %v", zero.Poll())
	}
	w := New(KVM.WithMax(0))
	for range 10 {
		w.Done(us, true)
	}
	if w.Poll() != 0 {
		t.Fatalf("Max 0 polls %v", w.Poll())
	}
	w = New(KVM)
	for range 10 {
		w.Done(190*us, true)
	}
	if w.Poll() != 200*us {
		t.Fatalf("window %v, want Max", w.Poll())
	}
	w.p.Max = 50 * us
	if w.Poll() != 50*us {
		t.Fatalf("window %v after Max dropped to 50us", w.Poll())
	}
	g := New(Policy{Max: 100 * us, GrowStart: 10 * us})
	g.Done(us, true)
	if g.Poll() != 0 {
		t.Fatalf("Grow 0 grew the window to %v", g.Poll())
	}
}
