// This file holds the Observer: what the LAPICs and the vCPU loop tell
// whoever measures interrupts (package accounting: IPI counts, latency
// histograms, the exits an interrupt costs its receiver) about each one on
// its way, from the send to the EOI. The mechanism reads nothing back but
// a Trace, which it carries with the interrupt untouched; without an
// observer (Options.Observer nil) every event goes to NopObserver.

package vlapic

import "math/bits"

// Trace is an observer's mark on one interrupt (Message.Trace): the LAPICs
// carry it from the send to each target's acceptance and hand it back
// there; 0 is no mark. Only the observer knows what it holds.
type Trace uint64

// ExitReason is why a vCPU took an exit for an interrupt that waits for
// it, unacknowledged (Observer.ExitFor).
type ExitReason uint8

const (
	ExitHLT    ExitReason = iota // the HLT exit the interrupt woke
	ExitKick                     // the kick that made the running vCPU take it
	ExitWindow                   // the interrupt window it waited for
)

// Observer is told what happens to interrupts, for measurement only: no
// answer changes what the LAPICs or the vCPU loop do. cpu is always the
// CPU the event happens on (the sender for Sending and Sent, the target
// for the rest).
//
// Concurrency: the methods are called on vCPU threads (and, for Accepted,
// on any thread that delivers), some with a LAPIC's lock held, as each
// says: they must not block, allocate or call back into the Bus. The
// events a CPU's LAPIC reports under its lock (Acknowledged,
// Unacknowledged, Ended, Refused, Reset) are serialised per CPU by that
// lock.
type Observer interface {
	// Sending: cpu's ICR or SELF_IPI write (x2apic: in x2APIC mode) is
	// about to send m; the Trace returned rides with m to every target.
	// Sender's LAPIC lock held.
	Sending(cpu int, m Message, x2apic bool) Trace
	// Sent: that IPI, traced t, reached targets CPUs. No lock held.
	Sent(cpu int, t Trace, targets int)
	// Accepted: cpu's LAPIC accepted vector v of an interrupt traced t
	// (t != 0): IRR set, or posted to the AVIC page. Any thread; cpu's
	// lock held on the plain path, none on the AVIC one.
	Accepted(cpu int, v uint8, t Trace)
	// Refused: v, posted to cpu's AVIC page, was dropped at the fold
	// (the LAPIC was disabled since). cpu's lock held.
	Refused(cpu int, v uint8)
	// Acknowledged: cpu's LAPIC moved v from IRR to ISR, to be injected.
	// cpu's lock held.
	Acknowledged(cpu int, v uint8)
	// Unacknowledged: v went back from ISR to IRR (an injection taken
	// back); it is acknowledged again later. cpu's lock held.
	Unacknowledged(cpu int, v uint8)
	// Ended: cpu's LAPIC ended v (EOI); byWrite: by the guest's write to
	// the EOI register, an exit of cpu's, not a PV EOI. cpu's lock held.
	Ended(cpu int, v uint8, byWrite bool)
	// Reset: INIT emptied cpu's IRR and ISR. cpu's lock held.
	Reset(cpu int)
	// Injected: cpu's vCPU injected v (KVM_INTERRUPT). vCPU thread.
	Injected(cpu int, v uint8)
	// Withdrawn: cpu's vCPU took back the injection of v, which KVM never
	// delivered (it is injected again later). vCPU thread.
	Withdrawn(cpu int, v uint8)
	// ExitFor: cpu's vCPU took an exit, for why, made for vector v, which
	// waits for it unacknowledged. vCPU thread.
	ExitFor(cpu int, v uint8, why ExitReason)
}

// NopObserver observes nothing: the observer of a Bus or vCPU given none.
type NopObserver struct{}

func (NopObserver) Sending(int, Message, bool) Trace { return 0 }
func (NopObserver) Sent(int, Trace, int)             {}
func (NopObserver) Accepted(int, uint8, Trace)       {}
func (NopObserver) Refused(int, uint8)               {}
func (NopObserver) Acknowledged(int, uint8)          {}
func (NopObserver) Unacknowledged(int, uint8)        {}
func (NopObserver) Ended(int, uint8, bool)           {}
func (NopObserver) Reset(int)                        {}
func (NopObserver) Injected(int, uint8)              {}
func (NopObserver) Withdrawn(int, uint8)             {}
func (NopObserver) ExitFor(int, uint8, ExitReason)   {}

// Observer returns the observer of the LAPIC's Bus (NopObserver without
// one), which the vCPU loop tells its own events.
func (a *LAPIC) Observer() Observer { return a.bus.obs }

// observeAccepted tells the observer of vector v accepted, if its
// interrupt is traced. Any sender, any lock.
func (a *LAPIC) observeAccepted(v uint8, t Trace) {
	if t != 0 {
		a.bus.obs.Accepted(a.cpu, v, t)
	}
}

// observeRefused tells the observer of the vectors of word i (64 vectors
// from 64*i) of the AVIC page that were posted and then refused.
func (a *LAPIC) observeRefused(i int, w uint64) {
	for ; w != 0; w &= w - 1 {
		a.bus.obs.Refused(a.cpu, uint8(64*i+bits.TrailingZeros64(w)))
	}
}
