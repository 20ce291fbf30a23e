// This file implements the IOAPIC type: its state, the power-on reset, the
// batch of fires collected under the lock and run after it, and the storm
// guard's deferred re-fire.

package vioapic

import (
	"sync"
	"time"
)

// IOAPIC is one 24-pin I/O APIC.
//
// Locking rule: every field below mu is guarded by mu. vCPU threads (MMIO,
// the EOI register, EOI broadcasts) and device threads (SetLine) may call
// any method concurrently. A method decides under mu what fires, then
// unlocks and calls Sink.Fire, so the Sink may call back into the IOAPIC.
//
// Remote IRR rule: a level entry's Remote IRR is set under mu before its
// Fire is called (the interrupt is in flight), so a concurrent assert cannot
// fire it twice and an EOI that races ahead of Fire's return still clears
// it. If Fire then returns false, Remote IRR is cleared again under mu,
// but only if the pin has not fired since (gen is unchanged): otherwise the
// bit belongs to the later fire, or an EOI already cleared it.
type IOAPIC struct {
	sink    Sink
	retryFn func() // a.retry, bound once so that arming it does not allocate

	mu      sync.Mutex
	sched   func(d time.Duration, f func())
	id      uint8 // bits 27:24 of the ID register
	sel     uint8 // IOREGSEL
	rte     [Pins]uint64
	lines   uint32       // electrical level of each input line, bit per pin
	gen     [Pins]uint32 // fires of each pin so far, for the Remote IRR rule
	eoiRuns [Pins]uint32 // successive EOI re-fires of each pin (storm guard)
	held    uint32       // pins whose EOI re-fire the storm guard holds back
	armed   bool         // a deferred re-fire is scheduled
	stats   [Pins]PinStats
}

// New returns an IOAPIC with ID id (4 bits) in its power-on state: every
// entry masked, every line low. A nil sink accepts nothing.
func New(id uint8, sink Sink) *IOAPIC {
	if sink == nil {
		sink = nopSink{}
	}
	a := &IOAPIC{sink: sink, sched: afterFunc}
	a.retryFn = a.retry
	a.mu.Lock()
	a.resetLocked()
	a.id = id & 0xF
	a.mu.Unlock()
	return a
}

// Reset puts the registers in their power-on state (ID 0, every entry
// masked), as a chipset reset does. Line levels and counters are kept: they
// belong to the devices and to the accounting.
func (a *IOAPIC) Reset() {
	a.mu.Lock()
	a.resetLocked()
	a.mu.Unlock()
}

func (a *IOAPIC) resetLocked() {
	a.id, a.sel = 0, 0
	for p := range a.rte {
		a.rte[p] = RTEMasked
		a.eoiRuns[p] = 0
	}
	a.held = 0
}

// SetScheduler replaces the timer the storm guard uses to run a deferred
// re-fire: sched(d, f) must call f once, after d, on any goroutine, and
// must not block. The default is time.AfterFunc. Tests pass a fake.
func (a *IOAPIC) SetScheduler(sched func(d time.Duration, f func())) {
	if sched == nil {
		sched = afterFunc
	}
	a.mu.Lock()
	a.sched = sched
	a.mu.Unlock()
}

func afterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }

// assertedLocked reports whether pin p's input is asserted: its line level,
// inverted for an active-low entry.
func (a *IOAPIC) assertedLocked(p int) bool {
	return (a.lines>>p&1 != 0) != (a.rte[p]&RTEActiveLow != 0)
}

// shot is one fire decided under the lock.
type shot struct {
	pin   int
	level bool
	gen   uint32
	rte   uint64
}

// batch holds the fires of one method call. No call fires a pin twice, so
// Pins entries suffice; it lives on the caller's stack.
type batch struct {
	n int
	s [Pins]shot
	// arm asks for a deferred re-fire (storm guard) after unlocking.
	arm   bool
	sched func(d time.Duration, f func())
}

// serviceLocked fires pin p into b if its entry is unmasked and, for a
// level entry, Remote IRR is clear; a level entry's Remote IRR is set at
// once (see the Remote IRR rule on IOAPIC). The caller has checked that the
// pin is asserted (level) or saw a rising edge (edge).
func (a *IOAPIC) serviceLocked(p int, b *batch) {
	e := a.rte[p]
	if e&RTEMasked != 0 {
		return
	}
	level := e&RTELevel != 0
	if level {
		if e&RTERemoteIRR != 0 {
			return
		}
		a.rte[p] |= RTERemoteIRR
	}
	a.gen[p]++
	a.stats[p].Fired++
	b.s[b.n] = shot{pin: p, level: level, gen: a.gen[p], rte: e}
	b.n++
}

// run calls the Sink for each fire in b, with no lock held, and undoes
// Remote IRR for level fires that nobody accepted. Then it arms the storm
// guard's deferred re-fire if asked.
func (a *IOAPIC) run(b *batch) {
	for i := range b.n {
		s := &b.s[i]
		if a.sink.Fire(s.pin, s.rte) {
			continue
		}
		a.mu.Lock()
		a.stats[s.pin].Undelivered++
		if s.level && a.gen[s.pin] == s.gen {
			a.rte[s.pin] &^= RTERemoteIRR
		}
		a.mu.Unlock()
	}
	if b.arm {
		b.sched(StormDelay, a.retryFn)
	}
}

// retry is the storm guard's deferred re-fire, like KVM's eoi_inject work:
// every asserted level entry whose Remote IRR is clear is serviced.
func (a *IOAPIC) retry() {
	var b batch
	a.mu.Lock()
	a.armed = false
	a.held = 0
	for p := range Pins {
		if a.rte[p]&RTELevel != 0 && a.assertedLocked(p) {
			a.serviceLocked(p, &b)
		}
	}
	a.mu.Unlock()
	a.run(&b)
}

type nopSink struct{}

func (nopSink) Fire(int, uint64) bool { return false }
