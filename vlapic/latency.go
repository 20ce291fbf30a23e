// This file implements IPI latency stamps: an IPI carries the time its
// sender's ICR write (or PV send-IPI) was served, each target keeps that
// stamp with the vector from IRR to ISR, and the Bus's LatencyObserver
// sees the time from the send to three points on the target: the vector
// accepted (IRR set or posted), acknowledged for injection, and ended (EOI
// or PV EOI). The clock is read at the send and at each stage, never on
// an exit that sends nothing. Without an observer (Options.Latency nil)
// nothing is stamped or kept.

package vlapic

import (
	"math/bits"
	"sync/atomic"
)

// Stage is a point on an IPI's way to its target at which its latency is
// observed, from the send.
type Stage uint8

const (
	StageAccepted Stage = iota // the target accepted it: IRR set, or posted (AVIC)
	StageInjected              // the target's vCPU acknowledged it, to inject it
	StageEnded                 // the target ended it: EOI (or the PV EOI completed)
	NumStages
)

var stageNames = [NumStages]string{"accepted", "injected", "ended"}

func (s Stage) String() string {
	if s < NumStages {
		return stageNames[s]
	}
	return "stage?"
}

// LatencyObserver is told the latency of every stamped IPI at each Stage
// of each target. Tag classifies an IPI the LAPIC sends from an ICR (or
// SELF_IPI) write, for the observer's own use (e.g. by destination kind);
// the same tag comes back with each Observe. Both are called on vCPU
// threads, with LAPIC locks held: they must not block, allocate or call
// back into the Bus.
type LatencyObserver interface {
	Tag(m Message, x2apic bool) uint8
	Observe(s Stage, tag uint8, ns int64)
}

// Stamp is the time and tag an IPI carries (Message.Stamp): 0 is none.
type Stamp uint64

// MakeStamp is a stamp of time at (Clock time, 0 or more) and tag.
func MakeStamp(at int64, tag uint8) Stamp { return Stamp(uint64(at+1)<<8 | uint64(tag)) }

// At is the stamp's time; Tag its tag.
func (s Stamp) At() int64  { return int64(s>>8) - 1 }
func (s Stamp) Tag() uint8 { return uint8(s) }

// latency is one LAPIC's stamps, allocated only with an observer.
//
// Concurrency: pending may be written by any sender (a CAS from 0, so the
// oldest of coalesced deliveries keeps its stamp) and is taken by the
// acknowledgement under mu; service is guarded by mu.
type latency struct {
	pending [256]atomic.Uint64 // Stamp of the vector's oldest unacknowledged delivery
	service [256]Stamp         // Stamp of each vector in service
}

// Stamp is the stamp of an IPI sent now with tag, for senders outside the
// LAPIC (govmm's PV send-IPI); 0 without an observer.
func (b *Bus) Stamp(tag uint8) Stamp {
	if b.latency == nil {
		return 0
	}
	return MakeStamp(b.clock.Now(), tag)
}

// stampSend stamps an IPI this LAPIC sends from an ICR or SELF_IPI write.
func (a *LAPIC) stampSend(m *Message, x2 bool) {
	if a.lat != nil {
		m.Stamp = MakeStamp(a.bus.clock.Now(), a.bus.latency.Tag(*m, x2))
	}
}

// stampAccepted keeps the stamp of a vector just accepted and observes
// its first stage. Any sender, any lock.
func (a *LAPIC) stampAccepted(v uint8, s Stamp) {
	if a.lat == nil || s == 0 {
		return
	}
	a.lat.pending[v].CompareAndSwap(0, uint64(s))
	a.bus.latency.Observe(StageAccepted, s.Tag(), a.bus.clock.Now()-s.At())
}

// stampInjectedLocked moves v's stamp into service at its acknowledgement.
func (a *LAPIC) stampInjectedLocked(v uint8) {
	if a.lat == nil {
		return
	}
	s := Stamp(a.lat.pending[v].Swap(0))
	a.lat.service[v] = s
	if s != 0 {
		a.bus.latency.Observe(StageInjected, s.Tag(), a.bus.clock.Now()-s.At())
	}
}

// stampEndedLocked observes the end of v (EOI), forgets its stamp and
// returns it.
func (a *LAPIC) stampEndedLocked(v uint8) Stamp {
	if a.lat == nil {
		return 0
	}
	s := a.lat.service[v]
	if s != 0 {
		a.lat.service[v] = 0
		a.bus.latency.Observe(StageEnded, s.Tag(), a.bus.clock.Now()-s.At())
	}
	return s
}

// PendingTag is the latency tag of the IPI that requested vector v, while
// v waits in IRR (or the AVIC page) unacknowledged: what a kick, a wake
// from HLT or an interrupt window for v was for. ok is false for a vector
// no stamped IPI requested (a timer or device interrupt, or no observer).
// Any thread.
func (a *LAPIC) PendingTag(v uint8) (tag uint8, ok bool) {
	if a.lat == nil {
		return 0, false
	}
	s := Stamp(a.lat.pending[v].Load())
	return s.Tag(), s != 0
}

// stampWithdrawnLocked puts v's stamp back to pending when an injection
// is taken back (Unacknowledge): it is injected again later, and its
// latency then still runs from the send.
func (a *LAPIC) stampWithdrawnLocked(v uint8) {
	if a.lat == nil {
		return
	}
	if s := a.lat.service[v]; s != 0 {
		a.lat.service[v] = 0
		a.lat.pending[v].CompareAndSwap(0, uint64(s))
	}
}

// forgetStamps drops the pending stamps of the vectors of word i (64
// vectors from 64*i) of the AVIC page that were posted and then refused.
func (a *LAPIC) forgetStamps(i int, w uint64) {
	if a.lat == nil {
		return
	}
	for ; w != 0; w &= w - 1 {
		a.lat.pending[64*i+bits.TrailingZeros64(w)].Store(0)
	}
}

// forgetAllStamps drops every stamp: INIT emptied IRR and ISR.
func (a *LAPIC) forgetAllStamps() {
	if a.lat == nil {
		return
	}
	for v := range a.lat.pending {
		a.lat.pending[v].Store(0)
	}
	a.lat.service = [256]Stamp{}
}
