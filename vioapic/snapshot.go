// This file implements Snapshot: a consistent value copy of the IOAPIC for
// the dashboard and for debugging.

package vioapic

// State is a copy of an IOAPIC's registers and counters at one instant.
// Lines, Asserted and RemoteIRR have one bit per pin.
type State struct {
	ID          uint8  // bits 27:24 of the ID register
	Version     uint32 // version register
	Arbitration uint32 // arbitration register
	IOREGSEL    uint8
	RTE         [Pins]uint64
	Lines       uint32 // electrical line levels
	Asserted    uint32 // line levels after polarity
	RemoteIRR   uint32
	Pins        [Pins]PinStats
}

// PinStats counts what happened on one pin.
type PinStats struct {
	Fired       uint64 // Sink.Fire calls
	Undelivered uint64 // of those, returned false
	Coalesced   uint64 // level asserts while Remote IRR was set
	MaskedLost  uint64 // rising edges on a masked edge entry
	Deferred    uint64 // EOI re-fires put off by the storm guard
}

// Snapshot returns a copy of the IOAPIC's state.
func (a *IOAPIC) Snapshot() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := State{
		ID:          a.id,
		Version:     Version,
		Arbitration: uint32(a.id) << 24,
		IOREGSEL:    a.sel,
		RTE:         a.rte,
		Lines:       a.lines,
		Pins:        a.stats,
	}
	for p := range Pins {
		if a.assertedLocked(p) {
			s.Asserted |= 1 << p
		}
		if a.rte[p]&RTERemoteIRR != 0 {
			s.RemoteIRR |= 1 << p
		}
	}
	return s
}
