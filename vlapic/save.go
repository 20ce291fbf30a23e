// This file implements Save and Restore: a LAPIC's whole state as a value
// a snapshot can carry to another process (govmm restore), and back.
// Unlike Snapshot (a view for the dashboard), Saved holds everything an
// identical LAPIC needs, and its timer as time remaining, since the clock
// of the process that restores it is not the one that saved it.

package vlapic

import (
	"fmt"
)

// Saved is a LAPIC's state in a snapshot. Vectors are in register order
// (bit v%32 of word v/32 is vector v); vectors posted to the AVIC backing
// page are folded into IRR first.
type Saved struct {
	Base   uint64
	Mode   Mode
	XID    uint8
	LDR    uint32
	DFR    uint32
	SVR    uint32
	TPR    uint32
	IRR    [8]uint32
	ISR    [8]uint32
	TMR    [8]uint32
	ESR    uint32
	ESRAcc uint32 // errors accumulated since the last ESR write
	LVT    [nLVT]uint32
	ICR    uint64
	Timer  SavedTimer
	// Events latched and not yet taken by the vCPU loop.
	Events Events
	// LPWins is the lowest-priority tie-break count.
	LPWins uint64
}

// SavedTimer is the APIC timer: the registers, and for an armed timer the
// time to its next expiry (Clock nanoseconds, never negative: a timer due
// when saved fires at once when restored, and only once).
type SavedTimer struct {
	Initial     uint32
	DCR         uint32
	Armed       bool
	RemainingNS int64
	TSCDeadline uint64
}

// Save returns the LAPIC's state. The vCPU must not be running guest code
// (its LAPIC may still take messages from other CPUs and devices: the
// caller pauses them all first).
func (a *LAPIC) Save() Saved {
	now := a.bus.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.foldLocked()
	s := Saved{
		Base: a.base, Mode: a.mode, XID: a.xid, LDR: a.ldr, DFR: a.dfr, SVR: a.svr, TPR: a.tpr,
		IRR: a.irr, ISR: a.isr, TMR: a.tmr, ESR: a.esr, ESRAcc: a.esrAcc, LVT: a.lvt, ICR: a.icr,
		Events: a.ev, LPWins: a.lpWins.Load(),
		Timer: SavedTimer{Initial: a.t.initial, DCR: a.t.dcr, Armed: a.t.armed, TSCDeadline: a.t.tscDL},
	}
	if a.t.armed {
		s.Timer.RemainingNS = max(a.t.deadline-now, 0)
	}
	return s
}

// Restore makes the LAPIC's state s, with its timer's next expiry
// s.Timer.RemainingNS from now. A state no LAPIC can be in (a mode out of
// range, a DFR model other than flat or cluster, a base that is not page
// aligned) is refused, and the LAPIC left as it was. The LAPIC's CPU is
// notified if s has anything to deliver.
func (a *LAPIC) Restore(s Saved) error {
	if err := s.check(); err != nil {
		return fmt.Errorf("LAPIC %d: %w", a.cpu, err)
	}
	now := a.bus.clock.Now()
	a.mu.Lock()
	a.pir.discard()
	a.base, a.mode, a.xid, a.ldr, a.dfr, a.svr, a.tpr = s.Base, s.Mode, s.XID, s.LDR, s.DFR, s.SVR, s.TPR
	a.irr, a.isr, a.tmr, a.esr, a.esrAcc, a.lvt, a.icr = s.IRR, s.ISR, s.TMR, s.ESR, s.ESRAcc, s.LVT, s.ICR
	a.ev = s.Events
	a.lpWins.Store(s.LPWins)
	a.t = timer{initial: s.Timer.Initial, dcr: s.Timer.DCR, div: divOf(s.Timer.DCR), tscDL: s.Timer.TSCDeadline}
	if a.t.initial != 0 && a.timerMode() != TimerTSCDeadline {
		a.t.period = a.countsToNS(uint64(a.t.initial))
	}
	if s.Timer.Armed {
		a.t.armed, a.t.deadline = true, addSat(now, s.Timer.RemainingNS)
	}
	a.updatePPRLocked()
	a.publishLocked()
	work := a.ev != (Events{}) || a.irr != (vec256{})
	a.mu.Unlock()
	a.bus.rebuild()
	if work {
		a.bus.sink.Notify(a.cpu)
	}
	return nil
}

// check refuses what no LAPIC's state can be.
func (s Saved) check() error {
	switch {
	case s.Mode > ModeX2APIC:
		return fmt.Errorf("mode %d is not disabled, xAPIC or x2APIC", s.Mode)
	case s.Base&0xFFF&^0xD00 != 0:
		return fmt.Errorf("APIC_BASE %#x has reserved bits set", s.Base)
	case s.DFR>>28 != 0xF && s.DFR>>28 != 0:
		return fmt.Errorf("DFR %#x is neither the flat nor the cluster model", s.DFR)
	case s.Timer.RemainingNS < 0:
		return fmt.Errorf("timer due %d ns ago", -s.Timer.RemainingNS)
	}
	return nil
}
