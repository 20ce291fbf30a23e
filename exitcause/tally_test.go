package exitcause

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestTallyCounts: Count and Begin both count one exit; End closes only
// an open window.
func TestTallyCounts(t *testing.T) {
	var y Tally
	y.Count(HLT)
	y.Begin(Kick)
	y.End()
	y.End() // none open: nothing changes
	y.Begin(Kick)
	y.End()
	if y.Load(HLT) != 1 || y.Load(Kick) != 2 || y.Total() != 3 {
		t.Fatalf("HLT %d, Kick %d, total %d; want 1, 2, 3", y.Load(HLT), y.Load(Kick), y.Total())
	}
	if w := y.window.Load(); w&windowOpen != 0 || w>>windowSeqShift != 2 {
		t.Fatalf("window word %#x, want closed after two windows", w)
	}
	var all [NumCauses]uint64
	y.LoadAll(&all)
	if all[HLT] != 1 || all[Kick] != 2 {
		t.Fatalf("LoadAll: HLT %d, Kick %d", all[HLT], all[Kick])
	}
}

// TestReadOutsideWaitsForWindow: a reader does not read while a window is
// open, unless waitFor refuses its cause; one that read across a window
// reads again.
func TestReadOutsideWaitsForWindow(t *testing.T) {
	var y Tally
	y.Begin(IRQWindow)
	var beside atomic.Uint64 // what the exit's handler counts beside it
	done := make(chan uint64)
	go func() {
		var got uint64
		y.ReadOutside(func() { got = beside.Load() }, func(Cause) bool { return true })
		done <- got
	}()
	time.Sleep(10 * time.Millisecond) // the reader's chance to read too early
	beside.Add(1)                     // the handler, after the count
	y.End()
	if got := <-done; got != 1 {
		t.Fatalf("read %d inside the window, want 1 (after End)", got)
	}

	y.Begin(PIOMark) // the marker's port: may wait on the reader
	reads := 0
	y.ReadOutside(func() { reads++ }, func(c Cause) bool { return c != PIOMark })
	if reads != 1 {
		t.Fatalf("%d reads with the marker's window open, want 1 (no wait)", reads)
	}
	y.End()
}

// TestReadOutsideRace: the vCPU counts exits and, inside each window,
// what serving them counts; every read sees the two equal. Under -race
// this is also the Tally's concurrency contract.
func TestReadOutsideRace(t *testing.T) {
	var y Tally
	var sent atomic.Uint64
	const n = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			y.Begin(MSRPVIPI)
			sent.Add(1)
			y.End()
		}
	}()
	for reads := 0; reads < 2000 || sent.Load() < n; reads++ {
		var exits, s uint64
		y.ReadOutside(func() { exits, s = y.Load(MSRPVIPI), sent.Load() }, func(Cause) bool { return true })
		if exits != s {
			t.Fatalf("read %d exits beside %d sends", exits, s)
		}
		if s == n {
			break
		}
	}
	wg.Wait()
}
