// This file implements Snapshot: a consistent value copy of one LAPIC for
// the dashboard and for debugging.

package vlapic

// State is a copy of a LAPIC's registers at one instant. IRR, ISR and TMR
// are in register order: bit v%32 of word v/32 is vector v. IRR includes the
// vectors posted to the AVIC backing page and not yet folded, which Posted
// lists apart.
type State struct {
	CPU  int
	ID   uint32
	LDR  uint32
	DFR  uint32
	Mode Mode
	Base uint64
	TPR  uint32
	PPR  uint32
	SVR  uint32
	IRR  [8]uint32
	// Posted is the AVIC IRR backing page (always empty in plain mode).
	Posted [8]uint32
	ISR    [8]uint32
	TMR    [8]uint32
	ESR    uint32
	ICR    uint64
	LVT    LVTs
	Timer  TimerState
	// Events latched and not yet taken.
	Events Events
}

// LVTs are the local vector table entries.
type LVTs struct {
	CMCI, Timer, Thermal, Perf, LINT0, LINT1, Error uint32
}

// TimerState is the APIC timer.
type TimerState struct {
	Mode        TimerMode
	Initial     uint32
	Current     uint32
	DCR         uint32
	Deadline    int64 // Clock ns, when Armed
	Armed       bool
	TSCDeadline uint64
}

// Snapshot returns a copy of the LAPIC's state.
func (a *LAPIC) Snapshot() State {
	now := a.bus.clock.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	posted := a.pir.peek()
	irr := a.irr
	for i := range irr {
		irr[i] |= posted[i]
	}
	return State{
		CPU:    a.cpu,
		ID:     a.idLocked(),
		LDR:    a.ldr,
		DFR:    a.dfr,
		Mode:   a.mode,
		Base:   a.base,
		TPR:    a.tpr,
		PPR:    a.pprv,
		SVR:    a.svr,
		IRR:    irr,
		Posted: posted,
		ISR:    a.isr,
		TMR:    a.tmr,
		ESR:    a.esr,
		ICR:    a.icr,
		LVT: LVTs{
			CMCI: a.lvt[lvtCMCI], Timer: a.lvt[lvtTimer], Thermal: a.lvt[lvtThermal],
			Perf: a.lvt[lvtPerf], LINT0: a.lvt[lvtLINT0], LINT1: a.lvt[lvtLINT1],
			Error: a.lvt[lvtError],
		},
		Timer: TimerState{
			Mode:        a.timerMode(),
			Initial:     a.t.initial,
			Current:     a.ccrLocked(now),
			DCR:         a.t.dcr,
			Deadline:    a.t.deadline,
			Armed:       a.t.armed,
			TSCDeadline: a.t.tscDL,
		},
		Events: a.ev,
	}
}
