package vcpu

import (
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/kvm"
)

// haltTwice runs one vCPU that halts twice under policy p: the first halt
// (the window is still 0: it sleeps) ends with an IPI after first; the
// second with one sent second after it halts, or, with waitPoll, second
// after its poll began. It returns the vCPU's counters.
func haltTwice(t *testing.T, p haltpoll.Policy, first, second time.Duration, waitPoll bool) *accounting.VCPU {
	t.Helper()
	r := newRig(t, 1)
	r.haltPoll = p
	f := newFake(open(kvm.ExitHLT), open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
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
	for waitPoll && a.HaltPolls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the second halt did not poll")
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(second)
	r.deliver(0, 0x55) // above 0x45, still in service (no EOI)
	wait()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, 0x55), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 2, exitcause.PIOOther: 1})
	r.counters(0, 2, 2, 0)
	return a
}

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

// A halt longer than the window polls for the whole window, then sleeps
// and is woken as always: a miss. (The bound is far above any first halt,
// however loaded the machine, so that the first halt always grows the
// window, to GrowStart: Grow 1 keeps it there.)
func TestHaltPollMiss(t *testing.T) {
	p := haltpoll.Policy{Max: 10 * time.Second, GrowStart: 2 * time.Millisecond, Grow: 1}
	a := haltTwice(t, p, time.Millisecond, 50*time.Millisecond, false)
	if a.HaltPolls.Load() != 1 || a.HaltPollHits.Load() != 0 {
		t.Errorf("%d polls, %d hits; want 1 and 0", a.HaltPolls.Load(), a.HaltPollHits.Load())
	}
	if ns := time.Duration(a.HaltPollNanos.Load()); ns < time.Millisecond || ns > 40*time.Millisecond {
		t.Errorf("polled %v, want about the 2ms window (counted from the halt's start), not the 50ms halt", ns)
	}
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
