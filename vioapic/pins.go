// This file implements the input side: line levels from devices (SetLine)
// and the EOI of level-triggered vectors broadcast by the LAPICs (EOI).

package vioapic

// SetLine sets the electrical level of input line pin, from a device. The
// pin is asserted when level differs from the entry's active-low bit.
//
// Edge entries fire once per rising edge of the asserted level; an edge
// that arrives while the entry is masked is lost (counted in MaskedLost).
// Level entries fire whenever the pin is asserted, unmasked and Remote IRR
// is clear; an assert that finds Remote IRR set is counted as Coalesced. A
// masked level pin that stays asserted fires when it is unmasked.
// Out-of-range pins are ignored.
func (a *IOAPIC) SetLine(pin int, level bool) {
	if pin < 0 || pin >= Pins {
		return
	}
	var b batch
	a.mu.Lock()
	was := a.assertedLocked(pin)
	if level {
		a.lines |= 1 << pin
	} else {
		a.lines &^= 1 << pin
	}
	if a.assertedLocked(pin) {
		e := a.rte[pin]
		switch {
		case e&RTELevel == 0 && was:
			// no edge
		case e&RTELevel == 0 && e&RTEMasked != 0:
			a.stats[pin].MaskedLost++
		case e&RTELevel != 0 && e&RTEMasked == 0 && e&RTERemoteIRR != 0:
			a.stats[pin].Coalesced++
		default:
			a.serviceLocked(pin, &b)
		}
	}
	a.mu.Unlock()
	a.run(&b)
}

// EOI is the EOI of a level-triggered vector, broadcast by a LAPIC (or
// written to the EOI register). It clears Remote IRR of every entry with
// that vector and fires again each level entry that is still asserted and
// unmasked: the device has not been quieted, so the interrupt is
// re-delivered. After StormLimit such immediate re-fires in a row on one
// pin, the next is deferred by StormDelay (see the package comment); until
// then further EOIs do not re-fire that pin.
func (a *IOAPIC) EOI(vector uint8) {
	var b batch
	a.mu.Lock()
	for p := range Pins {
		e := a.rte[p]
		if uint8(e) != vector {
			continue
		}
		a.rte[p] &^= RTERemoteIRR
		if e&RTELevel == 0 || e&RTEMasked != 0 || !a.assertedLocked(p) {
			a.eoiRuns[p] = 0
			continue
		}
		if a.held>>p&1 != 0 {
			continue // deferred already: a stray EOI must not bypass it
		}
		a.eoiRuns[p]++
		if a.eoiRuns[p] < StormLimit {
			a.serviceLocked(p, &b)
			continue
		}
		a.eoiRuns[p] = 0
		a.held |= 1 << p
		a.stats[p].Deferred++
		if !a.armed {
			a.armed = true
			b.arm, b.sched = true, a.sched
		}
	}
	a.mu.Unlock()
	a.run(&b)
}
