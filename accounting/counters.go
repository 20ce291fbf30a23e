// Package accounting counts every VM exit per vCPU and cause, and every IPI
// per destination kind, cheaply enough for the hot path: the causes of
// package exitcause index an array of atomic counters per vCPU (no maps, no
// locks, no allocation). Tables, JSON and metrics are all derived from it.
// It is the interrupt path's observer: it implements vlapic.Observer and
// vcpu.Counters, and nothing on that path imports it.
package accounting

import (
	"sync/atomic"

	"github.com/govmm/govmm/exitcause"
)

// VCPU holds one vCPU's counters. Exits is written only by that vCPU's
// thread and read by anyone (dashboard, sections, reports), hence atomics.
// IPIDelivered and the counters other vCPUs cause (KicksSent, KicksFailed)
// are written by whichever thread delivers or kicks. Every field is a
// plain atomic: counting is one lock-free add, with no allocation.
type VCPU struct {
	// Exits are counted by the vCPU's loop itself (vcpu.Config.Counters
	// hands it this Tally), and a section reads the whole VCPU outside
	// an exit's window (StableSnapshot).
	Exits        exitcause.Tally
	IPISent      [NumIPIKinds]atomic.Uint64 // ICR writes that sent an IPI, by kind
	IPIDelivered [NumIPIKinds]atomic.Uint64 // targets those IPIs reached
	// IPIRecvExits are this vCPU's exits that an IPI to it caused, by the
	// IPI's destination kind (read from its trace, Observer): the HLT exit
	// it woke, the kick or interrupt window it made, the EOI write that
	// ended it.
	IPIRecvExits [NumIPIKinds]atomic.Uint64
	InjectedVec  [256]atomic.Uint64 // vectors injected with KVM_INTERRUPT, by vector
	CPUCounters[atomic.Uint64]
}

// CPUCounters are a vCPU's event counters other than those by cause,
// kind or vector. This struct is their one declaration: T is atomic.Uint64
// in the live counters (VCPU) and uint64 in the copies (Snapshot,
// CPUReport), and each field's tags describe the counter for every place
// that shows it (CPUCounterTable, see table.go). Adding a counter is a
// field here plus the place that increments it.
type CPUCounters[T any] struct {
	// Injected does not include withdrawn injections (Withdraw).
	Injected T `json:"injected" metric:"govmm_injected_total" help:"Vectors injected into the vCPU with KVM_INTERRUPT." column:"injected"`
	NMIs     T `json:"nmis,omitempty" metric:"govmm_nmis_injected_total" help:"NMIs injected into the vCPU."`
	SMIs     T `json:"smis,omitempty" metric:"govmm_smis_injected_total" help:"SMIs injected into the vCPU (KVM_SMI): it entered SMM." listed:"smis_injected"`
	// SMIsDropped: the host's KVM has no SMM (KVM_CAP_X86_SMM), so an SMI
	// the LAPIC accepted cannot be delivered; counted and reported.
	SMIsDropped T `json:"smis_dropped,omitempty" metric:"govmm_smis_dropped_total" help:"SMIs accepted that the host's KVM (no SMM) could not take." listed:"smis_dropped_no_smm"`
	// KicksSent are AVIC's doorbells among others.
	KicksSent T `json:"kicks_sent" metric:"govmm_kicks_total" help:"Kicks (signal + immediate_exit) aimed at the vCPU." column:"kicked"`
	// KicksFailed: the target may run blind until its next exit.
	KicksFailed T `json:"kicks_failed,omitempty" metric:"govmm_kicks_failed_total" help:"Kick signals tgkill could not send."`
	// HostSignals: KVM_RUN ended with EINTR by a host signal (Go's
	// preemption SIGURG, which the raw KVM_RUN lets through) with nothing
	// for the guest: no exit of the guest's.
	HostSignals T `json:"host_signals,omitempty" metric:"govmm_host_signal_runs_total" help:"KVM_RUNs a host signal other than the kick ended with nothing for the guest (no exit of the guest's)." listed:"ended_by_host_signal"`
	Wakeups     T `json:"wakeups" metric:"govmm_wakeups_total" help:"Times the vCPU left HLT or wait-for-SIPI." column:"woken"`
	PVEOIs      T `json:"pv_eois,omitempty" metric:"govmm_pv_eois_total" help:"EOIs the guest did through KVM's PV EOI (no exit)." listed:"pv_eois"`
	// Withdrawn: injections taken back at the SYSCALL doorbell (KVM would
	// have delivered them at CPL0 on the user stack; pvsyscall/unit.go).
	Withdrawn T `json:"withdrawn,omitempty" metric:"govmm_injections_withdrawn_total" help:"Injections taken back at the SYSCALL doorbell (injected again later)." listed:"withdrawn_at_syscall_doorbell"`
	// Halt polling (package haltpoll): a halted vCPU's thread looks for a
	// wake-up for a moment before it sleeps. HaltPollHits are the polls
	// that saw it (the thread never slept); HaltPollNanos is the host
	// time spent polling, hit or miss.
	HaltPolls     T `json:"halt_polls,omitempty" metric:"govmm_halt_polls_total" help:"Halts whose thread polled for a wake-up before sleeping." listed:"halts_polled" group:"halt polling"`
	HaltPollHits  T `json:"halt_poll_hits,omitempty" metric:"govmm_halt_poll_hits_total" help:"Halt polls that saw the wake-up (the thread did not sleep)." listed:"woken_while_polling" group:"halt polling"`
	HaltPollNanos T `json:"halt_poll_ns,omitempty" metric:"govmm_halt_poll_seconds_total" scale:"1e-9" help:"Host time the vCPU's thread spent polling in halts." listed:"ns_polled" group:"halt polling"`
	// The DeviceIRQ* exits are what IPIRecvExits are for IPIs, for device
	// MSIs (tag DeviceMSI), by why each was charged (ChargeReason): what a
	// device's interrupt costs its receiver, and which of those exits a
	// delivery path can take away (PV EOI the EOI, posted interrupts the
	// kick and window; a halted receiver exits on HLT whatever the path).
	// DeviceIRQExits sums them.
	DeviceIRQHLT    T `json:"device_irq_exits_hlt,omitempty" metric:"govmm_device_irq_receiver_exits_total" label:"why=hlt" help:"Exits of the vCPU that device MSIs to it caused, by why: the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"hlt_woken" group:"receivers' exits caused by device MSIs"`
	DeviceIRQKick   T `json:"device_irq_exits_kick,omitempty" metric:"govmm_device_irq_receiver_exits_total" label:"why=kick" help:"Exits of the vCPU that device MSIs to it caused, by why: the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"kick" group:"receivers' exits caused by device MSIs"`
	DeviceIRQWindow T `json:"device_irq_exits_window,omitempty" metric:"govmm_device_irq_receiver_exits_total" label:"why=window" help:"Exits of the vCPU that device MSIs to it caused, by why: the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"interrupt_window" group:"receivers' exits caused by device MSIs"`
	DeviceIRQEOI    T `json:"device_irq_exits_eoi,omitempty" metric:"govmm_device_irq_receiver_exits_total" label:"why=eoi" help:"Exits of the vCPU that device MSIs to it caused, by why: the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"eoi" group:"receivers' exits caused by device MSIs"`
	// The IPIRecv* exits are IPIRecvExits (by destination kind) again, by
	// why each was charged.
	IPIRecvHLT    T `json:"ipi_receiver_exits_hlt,omitempty" metric:"govmm_ipi_receiver_exits_total" label:"why=hlt" help:"Exits of the vCPU that IPIs to it caused, by why (all destination kinds): the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"hlt_woken" group:"receivers' exits caused by IPIs"`
	IPIRecvKick   T `json:"ipi_receiver_exits_kick,omitempty" metric:"govmm_ipi_receiver_exits_total" label:"why=kick" help:"Exits of the vCPU that IPIs to it caused, by why (all destination kinds): the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"kick" group:"receivers' exits caused by IPIs"`
	IPIRecvWindow T `json:"ipi_receiver_exits_window,omitempty" metric:"govmm_ipi_receiver_exits_total" label:"why=window" help:"Exits of the vCPU that IPIs to it caused, by why (all destination kinds): the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"interrupt_window" group:"receivers' exits caused by IPIs"`
	IPIRecvEOI    T `json:"ipi_receiver_exits_eoi,omitempty" metric:"govmm_ipi_receiver_exits_total" label:"why=eoi" help:"Exits of the vCPU that IPIs to it caused, by why (all destination kinds): the HLT exit one woke, the kick or interrupt window it made, the EOI that ended it." listed:"eoi" group:"receivers' exits caused by IPIs"`
}

// DeviceIRQExits is every exit device MSIs caused the vCPU(s) of c.
func DeviceIRQExits(c *CPUCounters[uint64]) uint64 {
	return c.DeviceIRQHLT + c.DeviceIRQKick + c.DeviceIRQWindow + c.DeviceIRQEOI
}

// ChargeReason is why an exit is charged to the interrupt that caused it.
type ChargeReason uint8

const (
	ChargeHLT    ChargeReason = iota // the HLT exit the interrupt woke
	ChargeKick                       // the kick that made a running vCPU take it
	ChargeWindow                     // the interrupt window it waited for
	ChargeEOI                        // the EOI write that ended it
)

// Snapshot is a plain copy of a vCPU's counters.
type Snapshot struct {
	Exits        [exitcause.NumCauses]uint64
	IPISent      [NumIPIKinds]uint64
	IPIDelivered [NumIPIKinds]uint64
	IPIRecvExits [NumIPIKinds]uint64
	InjectedVec  [256]uint64
	CPUCounters[uint64]
}

// Snapshot copies the counters (each one atomically, the set not: a
// live view's).
func (v *VCPU) Snapshot() Snapshot {
	var s Snapshot
	v.Exits.LoadAll(&s.Exits)
	load(s.IPISent[:], v.IPISent[:])
	load(s.IPIDelivered[:], v.IPIDelivered[:])
	load(s.IPIRecvExits[:], v.IPIRecvExits[:])
	load(s.InjectedVec[:], v.InjectedVec[:])
	for _, k := range CPUCounterTable {
		*s.At(k) = v.At(k).Load()
	}
	return s
}

// StableSnapshot copies the counters at a moment the vCPU is serving no
// exit whose handler counts beside it (exitcause.Tally's window), so that
// an ICR write's exit and its IPIs fall on the same side of the copy. It
// does not wait for a vCPU serving the marker's port (PIOMark): that
// handler may be waiting for the caller, and counts nothing beside it.
func (v *VCPU) StableSnapshot() Snapshot {
	var s Snapshot
	v.Exits.ReadOutside(func() { s = v.Snapshot() }, func(c exitcause.Cause) bool { return c != exitcause.PIOMark })
	return s
}

// Sub returns s - o, counter by counter.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	d := s
	d.each(&o, func(d, o *uint64) { *d -= *o })
	return d
}

// add adds o to s, counter by counter.
func (s *Snapshot) add(o *Snapshot) { s.each(o, func(s, o *uint64) { *s += *o }) }

// each calls f with every counter of s and the same counter of o.
func (s *Snapshot) each(o *Snapshot, f func(s, o *uint64)) {
	for _, pair := range [][2][]uint64{{s.Exits[:], o.Exits[:]}, {s.IPISent[:], o.IPISent[:]},
		{s.IPIDelivered[:], o.IPIDelivered[:]}, {s.IPIRecvExits[:], o.IPIRecvExits[:]}, {s.InjectedVec[:], o.InjectedVec[:]}} {
		for i := range pair[0] {
			f(&pair[0][i], &pair[1][i])
		}
	}
	for _, k := range CPUCounterTable {
		f(s.At(k), o.At(k))
	}
}

func load(dst []uint64, src []atomic.Uint64) {
	for i := range src {
		dst[i] = src[i].Load()
	}
}

// Total is the number of exits of every cause.
func (s Snapshot) Total() uint64 {
	var t uint64
	for _, n := range s.Exits {
		t += n
	}
	return t
}

// Sum adds the causes in [from, to).
func (s Snapshot) Sum(from, to exitcause.Cause) uint64 {
	var t uint64
	for c := from; c < to; c++ {
		t += s.Exits[c]
	}
	return t
}
