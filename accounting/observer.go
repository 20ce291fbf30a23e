// This file holds Observer, accounting's implementation of
// vlapic.Observer: it counts each IPI by destination kind at its send,
// measures every traced interrupt's latency from the send to each stage on
// each target (Latencies), counts injections, and charges the exits an
// interrupt costs its receiver to that interrupt's kind (VCPU.Charge).

package accounting

import (
	"sync/atomic"

	"github.com/govmm/govmm/internal/tscclock"
	"github.com/govmm/govmm/vlapic"
)

// Observer is the VM's vlapic.Observer. A Trace it makes is the time of
// the send and the interrupt's kind: an IPIKind for IPIs (KindOf for an
// ICR or SELF_IPI write, IPIParavirt for govmm's PV send-IPI) or
// DeviceMSI for a device's MSI.
type Observer struct {
	vm *VM
	// tsc is the stamps' clock when NewObserver was given a
	// *tscclock.Clock (govmm's), read directly: no interface, and no
	// struct elsewhere (package tscclock says why); clock is nil then,
	// or else the clock given (a test's).
	tsc   tscclock.Clock
	clock vlapic.Clock
	cpus  []traces
	// observe is nil (latencies go to vm.Latency, called directly: a
	// method value would cost each stage two more pages, its function
	// value's and its wrapper's, which an exit in the nested AMD-V host
	// pays for: vcpu/loop.go) or a test's recorder.
	observe func(LatencyStage, IPIKind, int64)
}

var _ vlapic.Observer = (*Observer)(nil)

// traces are one CPU's traces of the interrupts on their way to it.
//
// Concurrency: pending is written by any sender (a CAS from 0, so the
// oldest of coalesced deliveries keeps its trace), read by the CPU's vCPU
// (ExitFor) and taken by the acknowledgement; service, and every take from
// pending, happen only in the events its LAPIC reports under its lock
// (Acknowledged, Unacknowledged, Ended, Refused, Reset).
//
// A vector's two are side by side (slot), not in two arrays 2 KiB apart:
// an acknowledgement takes both, and apart they were on two pages as
// often as not, one page more at that step in the nested AMD-V host
// (docs/exit-cost.md).
type traces [256]slot

type slot struct {
	pending atomic.Uint64 // Trace of the vector's oldest unacknowledged delivery
	service vlapic.Trace  // Trace of the vector in service
}

// NewObserver returns the observer that counts into vm, reading clock at
// each send and stage.
func NewObserver(vm *VM, clock vlapic.Clock) *Observer {
	o := &Observer{vm: vm, cpus: make([]traces, len(vm.CPUs))}
	if c, ok := clock.(*tscclock.Clock); ok {
		o.tsc = *c
	} else {
		o.clock = clock
	}
	return o
}

// now is the stamps' clock.
func (o *Observer) now() int64 {
	if o.clock != nil {
		return o.clock.Now()
	}
	return o.tsc.Now()
}

// makeTrace marks an interrupt of kind k sent at (Clock time, 0 or more);
// never 0.
func makeTrace(at int64, k IPIKind) vlapic.Trace { return vlapic.Trace(uint64(at+1)<<8 | uint64(k)) }

func traceAt(t vlapic.Trace) int64     { return int64(t>>8) - 1 }
func traceKind(t vlapic.Trace) IPIKind { return IPIKind(uint8(t)) }

// Trace marks an interrupt of kind k sent now by a sender outside the
// LAPICs (govmm's PV send-IPI, a device's MSI).
func (o *Observer) Trace(k IPIKind) vlapic.Trace { return makeTrace(o.now(), k) }

// TraceParavirt marks a paravirtual IPI (govmm's PV send-IPI) sent now.
func (o *Observer) TraceParavirt() vlapic.Trace { return o.Trace(IPIParavirt) }

// Sending traces an ICR or SELF_IPI write's IPI with its kind.
func (o *Observer) Sending(cpu int, m vlapic.Message, x2apic bool) vlapic.Trace {
	return o.Trace(KindOf(m, x2apic))
}

// Sent counts an IPI cpu sent and the targets it reached, by its kind.
func (o *Observer) Sent(cpu int, t vlapic.Trace, targets int) {
	k := traceKind(t)
	o.vm.CPUs[cpu].IPISent[k].Add(1)
	o.vm.CPUs[cpu].IPIDelivered[k].Add(uint64(targets))
}

// latency counts the time from t's send to now at stage s.
func (o *Observer) latency(s LatencyStage, t vlapic.Trace) {
	k, ns := traceKind(t), o.now()-traceAt(t)
	if o.observe != nil {
		o.observe(s, k, ns)
		return
	}
	o.vm.Latency.Observe(s, k, ns)
}

// Accepted keeps the trace of a vector just accepted and observes its
// first stage.
func (o *Observer) Accepted(cpu int, v uint8, t vlapic.Trace) {
	o.cpus[cpu][v].pending.CompareAndSwap(0, uint64(t))
	o.latency(LatencyAccepted, t)
}

// Refused drops the pending trace of a vector posted and then refused.
func (o *Observer) Refused(cpu int, v uint8) { o.cpus[cpu][v].pending.Store(0) }

// Acknowledged moves v's trace into service.
func (o *Observer) Acknowledged(cpu int, v uint8) {
	c := &o.cpus[cpu]
	t := vlapic.Trace(c[v].pending.Swap(0))
	c[v].service = t
	if t != 0 {
		o.latency(LatencyInjected, t)
	}
}

// Unacknowledged puts v's trace back to pending: injected again later, its
// latency then still runs from the send.
func (o *Observer) Unacknowledged(cpu int, v uint8) {
	c := &o.cpus[cpu]
	if t := c[v].service; t != 0 {
		c[v].service = 0
		c[v].pending.CompareAndSwap(0, uint64(t))
	}
}

// Ended observes the end of v and forgets its trace; an EOI write is an
// exit the interrupt cost cpu, charged to its kind.
func (o *Observer) Ended(cpu int, v uint8, byWrite bool) {
	c := &o.cpus[cpu]
	t := c[v].service
	if t == 0 {
		return
	}
	c[v].service = 0
	o.latency(LatencyEnded, t)
	if byWrite {
		o.vm.CPUs[cpu].Charge(uint8(traceKind(t)), ChargeEOI)
	}
}

// Reset forgets every trace of cpu: INIT emptied its IRR and ISR.
func (o *Observer) Reset(cpu int) {
	c := &o.cpus[cpu]
	for v := range c {
		c[v].pending.Store(0)
		c[v].service = 0
	}
}

// Injected counts v injected into cpu.
func (o *Observer) Injected(cpu int, v uint8) { o.vm.CPUs[cpu].Inject(v) }

// Withdrawn takes back the count of an injection KVM never delivered.
func (o *Observer) Withdrawn(cpu int, v uint8) { o.vm.CPUs[cpu].Withdraw(v) }

// chargeOf is the vCPU loop's exit reason as a charge. A switch, not a
// table: a table is a page of read-only data of its own, which each
// charge would touch (vcpu/loop.go says why pages count).
func chargeOf(why vlapic.ExitReason) ChargeReason {
	switch why {
	case vlapic.ExitHLT:
		return ChargeHLT
	case vlapic.ExitKick:
		return ChargeKick
	case vlapic.ExitWindow:
		return ChargeWindow
	}
	return ChargeEOI
}

// ExitFor charges cpu's exit, made for v, to the traced interrupt that
// requested v; a vector nothing traced (a timer's, the IOAPIC's) charges
// nothing.
func (o *Observer) ExitFor(cpu int, v uint8, why vlapic.ExitReason) {
	if t := vlapic.Trace(o.cpus[cpu][v].pending.Load()); t != 0 {
		o.vm.CPUs[cpu].Charge(uint8(traceKind(t)), chargeOf(why))
	}
}

// KindOf classifies an IPI sent by an ICR or SELF_IPI write (x2apic: in
// x2APIC mode) by how its destination was named.
func KindOf(m vlapic.Message, x2apic bool) IPIKind {
	switch m.Shorthand {
	case vlapic.Self:
		return IPISelf
	case vlapic.AllIncludingSelf:
		return IPIAllIncludingSelf
	case vlapic.AllExcludingSelf:
		return IPIAllExcludingSelf
	}
	switch {
	case x2apic && m.Dest == 0xFFFFFFFF, !x2apic && m.Dest == 0xFF:
		return IPIBroadcast
	case x2apic && m.DestMode == vlapic.Logical:
		return IPIX2APICLogical
	case x2apic:
		return IPIX2APICPhysical
	case m.DestMode == vlapic.Logical:
		return IPIXAPICLogical
	}
	return IPIXAPICPhysical
}
