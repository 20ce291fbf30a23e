package main

import (
	"testing"
	"time"
)

func TestRecurseMatchesExpect(t *testing.T) {
	for _, depth := range []int{1, 2, 100, 3000} {
		if got, want := recurse(depth, 42), expect(depth, 42); got != want {
			t.Errorf("depth %d: recurse %#x, expect %#x", depth, got, want)
		}
	}
}

func TestRunFindsNothingOnASaneMachine(t *testing.T) {
	s := run(300*time.Millisecond, 4, 0)
	if s.err != nil {
		t.Fatal(s.err)
	}
	for name, n := range map[string]int64{"recursions": s.recursions.Load(), "buffers": s.buffers.Load(), "copies": s.copies.Load(),
		"XMM holds": s.xmm.Load(), "register holds": s.gpr.Load(), "discards": s.zaps.Load(), "GCs": s.gcs.Load()} {
		if n == 0 {
			t.Errorf("no %s in the run", name)
		}
	}
}

func TestFailKeepsTheFirstError(t *testing.T) {
	s := &stats{}
	s.fail("first %d", 1)
	s.fail("second")
	if s.err == nil || s.err.Error() != "first 1" || !s.failed() {
		t.Errorf("err = %v", s.err)
	}
}
