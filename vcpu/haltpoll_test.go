package vcpu

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// haltTwice runs one vCPU that halts twice under policy p: the first halt
// (the window is still 0: it sleeps) ends with an IPI after first; the
// second with one sent second after it halts, or, with waitPoll, second
// after its poll began. It returns the vCPU's counters.
func haltTwice(t *testing.T, p haltpoll.Policy, first, second time.Duration, waitPoll bool) *accounting.VCPU {
	t.Helper()
	return haltTwiceOn(t, p, nil, first, func(a *accounting.VCPU) {
		deadline := time.Now().Add(5 * time.Second)
		for waitPoll && a.HaltPolls.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the second halt did not poll")
			}
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(second)
	})
}

// haltTwiceOn is haltTwice with the vCPU on clock clk (nil: the rig's,
// the wall's), and beforeSecond, called once the vCPU has halted the
// second time, returning when the second IPI is due.
func haltTwiceOn(t *testing.T, p haltpoll.Policy, clk vlapic.Clock, first time.Duration, beforeSecond func(*accounting.VCPU)) *accounting.VCPU {
	t.Helper()
	r := newRig(t, 1)
	r.haltPoll = p
	f := newFake(open(kvm.ExitHLT), open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	var wait func()
	if clk == nil {
		wait = r.start()
	} else {
		wait = startOn(r, clk)
	}
	a := &r.acct.CPUs[0]
	r.waitState(0, StateHalted)
	time.Sleep(first)
	r.deliver(0, 0x45)
	deadline := time.Now().Add(5 * time.Second)
	// The second HLT exit is counted before its halt begins, and after
	// the first halt ended.
	for r.exits(0, exitcause.HLT) < 2 || r.cpus[0].State() != StateHalted {
		if time.Now().After(deadline) {
			t.Fatalf("the vCPU did not halt a second time (state %v)", r.cpus[0].State())
		}
		time.Sleep(100 * time.Microsecond)
	}
	if a.HaltPollHits.Load() != 0 {
		t.Fatalf("the first halt was a poll hit: its window was 0")
	}
	beforeSecond(a)
	r.deliver(0, 0x55) // above 0x45, still in service (no EOI)
	wait()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, 0x55), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 2, exitcause.PIOOther: 1})
	r.counters(0, 2, 2, 0)
	return a
}

// startOn is r.start for a rig of one vCPU whose halts are timed on clk
// (its halt clock, Config.HaltClock).
func startOn(r *rig, clk vlapic.Clock) (wait func()) {
	r.build()
	r.cpus[0].haltClock = clk
	errc := make(chan error, 1)
	go func() { errc <- r.cpus[0].Run() }()
	return func() {
		r.t.Helper()
		select {
		case err := <-errc:
			r.check(err)
		case <-time.After(20 * time.Second):
			close(r.done)
			r.t.Fatal("vCPU loop still running after 20s")
		}
	}
}

// readClock moves only when it is read, by tick, or when told to: a
// halt's or a poll's length on it is a count of the vCPU loop's clock
// reads plus what the test added, whatever the host's scheduler did.
type readClock struct{ ns atomic.Int64 }

const tick = time.Microsecond // readClock's step per read

func (c *readClock) Now() int64              { return c.ns.Add(int64(tick)) }
func (c *readClock) TSC() uint64             { return uint64(c.Now()) }
func (c *readClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// A short halt grows the window (haltpoll); the next halt polls, and an
// IPI that comes while it polls ends the halt without a sleep: a hit,
// with the time polled counted. Exits and wake-ups are those of a halt
// without polling.
func TestHaltPollHit(t *testing.T) {
	p := haltpoll.Policy{Max: 4 * time.Second, GrowStart: 2 * time.Second, Grow: 2}
	a := haltTwice(t, p, 10*time.Millisecond, 20*time.Millisecond, true)
	if a.HaltPolls.Load() != 1 || a.HaltPollHits.Load() != 1 {
		t.Errorf("%d polls, %d hits; want 1 and 1", a.HaltPolls.Load(), a.HaltPollHits.Load())
	}
	if ns := time.Duration(a.HaltPollNanos.Load()); ns < 20*time.Millisecond || ns >= 2*time.Second {
		t.Errorf("polled %v, want from the IPI's 20ms to below the 2s window", ns)
	}
}

// A halt longer than the window polls for the whole window, counted
// from the halt's start, then sleeps and is woken as always: a miss. On
// a clock that moves only when read, the first halt lasts a few reads
// (far below Max: it grows the window to GrowStart, and Grow 1 keeps it
// there), the poll ends after the window's worth of reads whatever the
// host's load, and the halt then lasts 50 ms more, asleep, before the IPI:
// the polled time is the window less the reads between the halt's start
// and the poll's (one at least: the window counts from the halt's start),
// never the halt's 50 ms.
func TestHaltPollMiss(t *testing.T) {
	const window = 2 * time.Millisecond
	p := haltpoll.Policy{Max: 10 * time.Second, GrowStart: window, Grow: 1}
	clk := &readClock{}
	a := haltTwiceOn(t, p, clk, 0, func(a *accounting.VCPU) {
		deadline := time.Now().Add(10 * time.Second)
		for a.HaltPollNanos.Load() == 0 { // counted when the poll ends
			if time.Now().After(deadline) {
				t.Fatalf("the second halt's poll did not end by itself (%d polls)", a.HaltPolls.Load())
			}
			time.Sleep(100 * time.Microsecond)
		}
		clk.advance(50 * time.Millisecond)
	})
	if a.HaltPolls.Load() != 1 || a.HaltPollHits.Load() != 0 {
		t.Errorf("%d polls, %d hits; want 1 and 0", a.HaltPolls.Load(), a.HaltPollHits.Load())
	}
	if ns := time.Duration(a.HaltPollNanos.Load()); ns > window || ns < window-16*tick {
		t.Errorf("polled %v, want the %v window counted from the halt's start (less the few clock reads before the poll), not the 50ms halt", ns, window)
	}
	t.Logf("polled %v of the %v window", time.Duration(a.HaltPollNanos.Load()), window)
}

// With polling off (the zero Policy, or Max 0) a halt never polls.
func TestHaltPollOff(t *testing.T) {
	for _, p := range []haltpoll.Policy{{}, haltpoll.KVM.WithMax(0)} {
		a := haltTwice(t, p, time.Millisecond, time.Millisecond, false)
		if a.HaltPolls.Load() != 0 || a.HaltPollHits.Load() != 0 || a.HaltPollNanos.Load() != 0 {
			t.Errorf("policy %+v: %d polls, %d hits, %d ns; want none", p, a.HaltPolls.Load(), a.HaltPollHits.Load(), a.HaltPollNanos.Load())
		}
	}
}
