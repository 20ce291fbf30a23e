package vcpu

import (
	"testing"

	"github.com/govmm/govmm/exitcause"
)

// fakeYield replaces the TSC and Gosched for one test: the TSC reads *now,
// and each yield is counted and takes yieldWait cycles (the wait for a P).
func fakeYield(t *testing.T, now *uint64) *int {
	t.Helper()
	yields := 0
	oldTSC, oldYield := testTSC, yield
	testTSC, yield = func() uint64 { return *now }, func() { yields++; *now += yieldWait }
	t.Cleanup(func() { testTSC, yield = oldTSC, oldYield })
	return &yields
}

// yieldWait is how long a faked yield waits for a P, in TSC cycles.
const yieldWait = 1000

// TestYieldIfDue: the loop yields once it has gone yieldEvery TSC cycles
// since its start or since its last yield returned, however long that
// yield waited; with yieldEvery 0 it never yields.
func TestYieldIfDue(t *testing.T) {
	var now uint64
	yields := fakeYield(t, &now)
	v := &VCPU{yieldEvery: 100, testTSC: testTSC}
	for _, step := range []struct {
		now    uint64
		yields int
	}{
		{50, 0},
		{100, 1}, // 100 cycles since the start; back at 1100
		{1150, 1},
		{1199, 1},
		{1200, 2}, // back at 2200
		{2299, 2},
		{2300, 3},
	} {
		now = step.now
		v.yieldIfDue()
		if *yields != step.yields {
			t.Fatalf("at TSC %d: %d yields, want %d", step.now, *yields, step.yields)
		}
	}
	off := &VCPU{testTSC: testTSC}
	now = 1 << 40
	off.yieldIfDue()
	if *yields != 3 || off.lastYield != 0 {
		t.Errorf("yieldEvery 0 yielded or kept time: %d yields, lastYield %d", *yields, off.lastYield)
	}
}

// TestLoopYields: a loop that never blocks yields at each entry once it
// is due, and runs its guest as before.
func TestLoopYields(t *testing.T) {
	var now uint64
	yields := fakeYield(t, &now)
	r := newRig(t, 1)
	r.yieldEvery = 10
	f := newFake(outb(0x80, 1), outb(0x80, 2), outb(0x80, 3), outb(0x80, 0))
	r.fakes[0] = f
	f.onRun = func() { now += 10 } // each pass through the guest takes 10 cycles
	r.runOne()
	if *yields != 4 {
		t.Errorf("%d yields over 4 entries 10 cycles apart, want 4", *yields)
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.PIOOther: 4})
}
