package vmm

import (
	"slices"
	"testing"
	"time"
)

// TestAwaitLoopsGivesUp: loops that end when kicked are waited for; one
// that never returns (a vCPU a kick cannot bring out of KVM_RUN) is given
// up after the grace period and named, instead of holding Run forever.
func TestAwaitLoopsGivesUp(t *testing.T) {
	quick, kickable, stuck := make(chan struct{}), make(chan struct{}), make(chan struct{})
	close(quick)
	kicks := 0
	kick := func() {
		if kicks++; kicks == 3 {
			close(kickable)
		}
	}
	start := time.Now()
	got := awaitLoops([]<-chan struct{}{quick, kickable, stuck}, kick, 200*time.Millisecond)
	if !slices.Equal(got, []int{2}) {
		t.Errorf("still running: %v, want [2]", got)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("gave up after %v, before the grace period", d)
	}
	if kicks < 3 {
		t.Errorf("%d kicks, want them repeated until the loops end", kicks)
	}
	// Every loop returned: no wait at all for the grace period.
	start = time.Now()
	if got := awaitLoops([]<-chan struct{}{quick}, func() {}, time.Hour); len(got) != 0 || time.Since(start) > time.Second {
		t.Errorf("got %v after %v", got, time.Since(start))
	}
}
