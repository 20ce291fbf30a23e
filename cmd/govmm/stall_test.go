package main

import (
	"bytes"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type fakeStall struct {
	exits   atomic.Uint64
	guest   atomic.Int32
	dumps   atomic.Int32
	advance bool // every look sees a new exit
}

func (f *fakeStall) probe() stallProbe {
	return stallProbe{
		exits: func() uint64 {
			if f.advance {
				return f.exits.Add(1)
			}
			return f.exits.Load()
		},
		inGuest: func() int { return int(f.guest.Load()) },
		dump:    func(w io.Writer) { f.dumps.Add(1); io.WriteString(w, "vCPU 0: guest RIP ...\n") },
		every:   5 * time.Millisecond,
	}
}

func runStall(t *testing.T, f *fakeStall, after, watch time.Duration) string {
	t.Helper()
	// out is read only after watchStall has returned (done closed).
	var out bytes.Buffer
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { watchStall(f.probe(), after, &out, stop); close(done) }()
	time.Sleep(watch)
	close(stop)
	<-done
	return out.String()
}

func TestStallDumpsOnce(t *testing.T) {
	f := &fakeStall{}
	f.guest.Store(3)
	out := runStall(t, f, 30*time.Millisecond, 300*time.Millisecond)
	if f.dumps.Load() != 1 {
		t.Fatalf("%d dumps, want 1:\n%s", f.dumps.Load(), out)
	}
	if !strings.Contains(out, "no exit from any vCPU for 30ms with 3 of them in guest mode") || !strings.Contains(out, "vCPU 0: guest") {
		t.Errorf("output:\n%s", out)
	}
}

func TestStallNotWhileExiting(t *testing.T) {
	f := &fakeStall{advance: true}
	f.guest.Store(3)
	if out := runStall(t, f, 30*time.Millisecond, 200*time.Millisecond); f.dumps.Load() != 0 {
		t.Errorf("a guest that exits was dumped:\n%s", out)
	}
}

func TestStallNotWhenIdle(t *testing.T) {
	f := &fakeStall{} // no exits, but every vCPU halted
	if out := runStall(t, f, 30*time.Millisecond, 200*time.Millisecond); f.dumps.Load() != 0 {
		t.Errorf("an idle guest was dumped:\n%s", out)
	}
}

func TestStallOff(t *testing.T) {
	f := &fakeStall{}
	f.guest.Store(1)
	if runStall(t, f, 0, 100*time.Millisecond); f.dumps.Load() != 0 {
		t.Error("--stall-dump=0 dumped")
	}
}
