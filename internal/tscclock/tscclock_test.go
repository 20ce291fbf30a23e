package tscclock

import (
	"testing"
	"time"
)

// TestNow: the clock starts near 0 and follows the TSC forward at the
// rate it was given (here: the rate measured against Go's clock, so its
// nanoseconds agree with Go's within the measurement's slack).
func TestNow(t *testing.T) {
	c0, t0 := New(1e9), time.Now()
	time.Sleep(20 * time.Millisecond)
	ticks, wall := c0.Now(), time.Since(t0)
	if ticks <= 0 {
		t.Fatalf("Now %d after 20ms, want more than 0", ticks)
	}
	hz := uint64(float64(ticks) / wall.Seconds()) // the TSC's rate
	c := New(hz)
	if n := c.Now(); n < 0 || n > int64(time.Second) {
		t.Fatalf("a new clock reads %dns", n)
	}
	t1 := time.Now()
	time.Sleep(50 * time.Millisecond)
	got, want := c.Now(), time.Since(t1)
	if d := got - int64(want); d < -int64(20*time.Millisecond) || d > int64(20*time.Millisecond) {
		t.Errorf("after %v the clock read %v", want, time.Duration(got))
	}
	if c.TSC() == 0 {
		t.Error("TSC reads 0")
	}
}
