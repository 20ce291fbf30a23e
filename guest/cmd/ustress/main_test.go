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
	if s.recursions.Load() == 0 || s.buffers.Load() == 0 || s.gcs.Load() == 0 {
		t.Errorf("did nothing: %d recursions, %d buffers, %d GCs", s.recursions.Load(), s.buffers.Load(), s.gcs.Load())
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
