package vlapic

import (
	"strings"
	"testing"
)

// TestSaveRestore: a LAPIC saved with vectors requested and in service, a
// TPR, an error latched, an NMI and a periodic timer half-way, and restored
// into another bus whose clock reads something else entirely, is the same
// LAPIC: Save gives the same value back, the pending vector is the same,
// and the timer fires once at the time that remained, then every period.
func TestSaveRestore(t *testing.T) {
	b, a := timerBus(t)
	wr(t, a, RegTPR, 0x20)
	wr(t, a, RegLVTTimer, 0x31|1<<17) // periodic
	wr(t, a, RegTimerDCR, 0xB)        // divide by 1: 1 count = 1 ns
	wr(t, a, RegTimerICR, 1_000_000)
	b.Deliver(Message{Vector: 0x50, Source: -1})
	if v, ok := a.Acknowledge(); !ok || v != 0x50 {
		t.Fatalf("acknowledged %#x %v, want 0x50 in service", v, ok)
	}
	b.Deliver(Message{Vector: 0x40, Source: -1}) // below 0x50: waits
	b.Deliver(Message{Vector: 0x60, Trigger: Level, Assert: true, Source: -1})
	b.Deliver(Message{Delivery: NMI, Source: -1})
	wr(t, a, RegLVTError, 0x3F) // an illegal vector: ESR's send-illegal bit
	b.clock.advance(400_000)
	saved := a.Save()
	if saved.Timer.RemainingNS != 600_000 || !saved.Timer.Armed {
		t.Fatalf("timer saved as %+v, want armed with 600000 ns left", saved.Timer)
	}

	b2, a2 := timerBus(t)
	b2.clock.advance(7_777_777_777)
	if err := a2.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if n := b2.sink.take(); len(n) != 1 {
		t.Errorf("restore with vectors pending notified %v, want CPU 0 once", n)
	}
	again := a2.Save()
	if again != saved {
		t.Errorf("restored LAPIC saves as\n%+v\nwant\n%+v", again, saved)
	}
	if p := a2.TakePending(); !p.Fixed || p.Vector != 0x60 || p.NMIs != 1 {
		t.Errorf("pending after restore %+v, want vector 0x60 and the NMI", p)
	}
	b2.drain()
	b2.clock.advance(599_999)
	a2.Tick()
	expectFire(t, b2, 0x31, false)
	b2.clock.advance(1)
	a2.Tick()
	expectFire(t, b2, 0x31, true)
	b2.clock.advance(1_000_000)
	a2.Tick()
	expectFire(t, b2, 0x31, true)
}

// TestRestoreRefuses: a state no LAPIC can be in is refused with a line
// that names it, and the LAPIC keeps the state it had.
func TestRestoreRefuses(t *testing.T) {
	_, a := timerBus(t)
	good := a.Save()
	for _, c := range []struct {
		edit func(*Saved)
		want string
	}{
		{func(s *Saved) { s.Mode = 3 }, "mode 3"},
		{func(s *Saved) { s.Base |= 1 << 9 }, "reserved bits"},
		{func(s *Saved) { s.DFR = 0x5FFFFFFF }, "DFR"},
		{func(s *Saved) { s.Timer.RemainingNS = -1 }, "due"},
	} {
		s := good
		c.edit(&s)
		if err := a.Restore(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("restore of %+v: %v, want an error naming %q", s, err, c.want)
		}
		if got := a.Save(); got != good {
			t.Errorf("a refused restore changed the LAPIC: %+v", got)
		}
	}
}
