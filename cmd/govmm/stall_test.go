package main

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The stall watch is driven look by look: each look is a tick the test
// sends (unbuffered: a tick sent is a look taken) at a time the test
// chooses, so what it must do after so many looks and so much time does
// not depend on how fast the machine runs it.

type fakeStall struct {
	exits   atomic.Uint64
	guest   atomic.Int32
	dumps   atomic.Int32
	advance bool // every look sees a new exit
	// onLook, if set, is called at the start of look i (from 1; 0 is
	// the watch's start), on the watch's goroutine: what it changes, that
	// look sees.
	onLook func(i int)
	reads  int // of the exits, on the watch's goroutine
}

// start is the watch's clock when it begins.
var start = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

func (f *fakeStall) probe(ticks <-chan time.Time) stallProbe {
	return stallProbe{
		exits: func() uint64 {
			if f.onLook != nil {
				f.onLook(f.reads)
			}
			f.reads++
			if f.advance {
				return f.exits.Add(1)
			}
			return f.exits.Load()
		},
		inGuest: func() int { return int(f.guest.Load()) },
		dump:    func(w io.Writer) { f.dumps.Add(1); io.WriteString(w, "vCPU 0: guest RIP ...\n") },
		ticks:   ticks,
		now:     func() time.Time { return start },
	}
}

// watch runs watchStall on f and offers it n looks, every step of the
// clock; it returns what the watch printed and how many looks it took
// before it returned by itself (n if it was still watching: then it is
// stopped).
func watch(f *fakeStall, after, step time.Duration, n int) (string, int) {
	// out is read only after watchStall has returned (done closed).
	var out bytes.Buffer
	ticks := make(chan time.Time)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { watchStall(f.probe(ticks), after, &out, stop); close(done) }()
	for i := 1; i <= n; i++ {
		select {
		case ticks <- start.Add(time.Duration(i) * step):
		case <-done:
			return out.String(), i - 1
		}
	}
	close(stop)
	<-done
	return out.String(), n
}

// A guest with vCPUs in guest mode and no exit is dumped once, at the
// first look after the limit, and the watch ends.
func TestStallDumpsOnce(t *testing.T) {
	f := &fakeStall{}
	f.guest.Store(3)
	out, looks := watch(f, 30*time.Millisecond, 10*time.Millisecond, 100)
	if f.dumps.Load() != 1 || looks != 3 {
		t.Fatalf("%d dumps after %d looks, want 1 at the third (30ms):\n%s", f.dumps.Load(), looks, out)
	}
	if !strings.Contains(out, "no exit from any vCPU for 30ms with 3 of them in guest mode") || !strings.Contains(out, "vCPU 0: guest") {
		t.Errorf("output:\n%s", out)
	}
}

// Exits at every look: never dumped, however long it watches (490 ms of
// looks here); once they stop, the stall counts from the last exit: the
// exits stop after look 49, the dump comes at look 52, 30 ms later.
func TestStallNotWhileExiting(t *testing.T) {
	f := &fakeStall{advance: true}
	f.guest.Store(3)
	f.onLook = func(i int) { f.advance = i < 50 }
	out, looks := watch(f, 30*time.Millisecond, 10*time.Millisecond, 100)
	if f.dumps.Load() != 1 || looks != 52 {
		t.Errorf("%d dumps after %d looks, want 1 at look 52:\n%s", f.dumps.Load(), looks, out)
	}
	if f.reads != 53 {
		t.Errorf("the exits were read %d times, want 53 (the start and each look)", f.reads)
	}
}

// No exits with every vCPU halted is an idle guest: not dumped, and the
// stall is counted again from the idle look (every third look here, 30 ms
// without an exit). A vCPU stuck in guest mode from look 49 on is dumped
// at look 51, 30 ms after the last idle look (48), not at once.
func TestStallNotWhenIdle(t *testing.T) {
	f := &fakeStall{} // no exits, but every vCPU halted
	f.onLook = func(i int) {
		if i == 49 {
			f.guest.Store(1)
		}
	}
	out, looks := watch(f, 30*time.Millisecond, 10*time.Millisecond, 100)
	if f.dumps.Load() != 1 || looks != 51 {
		t.Errorf("%d dumps after %d looks, want 1 at look 51:\n%s", f.dumps.Load(), looks, out)
	}
}

// --stall-dump=0: the watch ends at once, without a look.
func TestStallOff(t *testing.T) {
	f := &fakeStall{}
	f.guest.Store(1)
	if _, looks := watch(f, 0, 10*time.Millisecond, 10); f.dumps.Load() != 0 || looks != 0 {
		t.Errorf("--stall-dump=0: %d dumps, %d looks; want none", f.dumps.Load(), looks)
	}
}
