package vcpu

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestWakerSleep: a wake-up ends a sleep, plain or raw, whether it comes
// before the sleep (consumed at once), during the raw wait, or after the
// raw wait's bound, in the plain wait that follows it; the word is left
// with no wake-up pending every time.
func TestWakerSleep(t *testing.T) {
	old := rawHaltSleep
	t.Cleanup(func() { rawHaltSleep = old })
	rawHaltSleep = unix.NsecToTimespec(int64(20 * time.Millisecond))
	for _, c := range []struct {
		name  string
		raw   bool
		after time.Duration // -1: woken before the sleep
	}{
		{"plain/before", false, -1}, {"plain/during", false, 5 * time.Millisecond},
		{"raw/before", true, -1}, {"raw/during-raw", true, 5 * time.Millisecond},
		{"raw/after-raw", true, 60 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w waker
			if c.after < 0 {
				w.wake()
			} else {
				go func() {
					time.Sleep(c.after)
					w.wake()
				}()
			}
			start := time.Now()
			done := make(chan struct{})
			go func() { w.sleep(c.raw); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("still asleep 10 s after the wake-up")
			}
			if d := time.Since(start); c.after > 0 && d < c.after {
				t.Errorf("woke after %v, before the wake-up at %v", d, c.after)
			}
			if got := w.word.Load(); got != wakeNone {
				t.Errorf("word %d after the sleep, want %d (no wake-up pending)", got, wakeNone)
			}
		})
	}
}
