// This file implements Save and Restore: the IOAPIC's whole state as a
// value a snapshot carries to another process (govmm restore), and back.

package vioapic

import "fmt"

// Saved is the IOAPIC's state in a snapshot.
type Saved struct {
	ID    uint8 // bits 27:24 of the ID register
	Sel   uint8 // IOREGSEL
	RTE   [Pins]uint64
	Lines uint32 // electrical level of each input line, bit per pin
	// EOIRuns and Held are the storm guard's: successive EOI re-fires per
	// pin, and the pins whose re-fire it holds back (one deferred re-fire
	// is armed again at restore for them).
	EOIRuns [Pins]uint32
	Held    uint32
	Stats   [Pins]PinStats
}

// Save returns the IOAPIC's state. The devices that drive its lines must
// be paused first (the caller's VM is).
func (a *IOAPIC) Save() Saved {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Saved{ID: a.id, Sel: a.sel, RTE: a.rte, Lines: a.lines, EOIRuns: a.eoiRuns, Held: a.held, Stats: a.stats}
}

// Restore makes the IOAPIC's state s. A pin whose re-fire the storm guard
// held back gets its deferred re-fire again, so no interrupt it owed is
// lost; nothing else fires (a level pin asserted with Remote IRR clear was
// serviced before the save). An ID wider than 4 bits is refused.
func (a *IOAPIC) Restore(s Saved) error {
	if s.ID > 0xF {
		return fmt.Errorf("IOAPIC: ID %#x is wider than 4 bits", s.ID)
	}
	a.mu.Lock()
	a.id, a.sel, a.rte, a.lines, a.eoiRuns, a.held, a.stats = s.ID, s.Sel, s.RTE, s.Lines, s.EOIRuns, s.Held, s.Stats
	for p := range a.gen {
		a.gen[p]++ // no fire in flight from before belongs to this state
	}
	arm := a.held != 0 && !a.armed
	a.armed = a.armed || arm
	sched := a.sched
	a.mu.Unlock()
	if arm {
		sched(StormDelay, a.retryFn)
	}
	return nil
}
