package accounting

import "sync/atomic"

// Compile-time check that every fixed cause has a name.
var _ = [1]int{}[len(fixedNames)-int(NumCauses-causeFixed)]

// VCPU holds one vCPU's counters. Exits is written only by that vCPU's
// thread and read by anyone (dashboard, sections, reports), hence atomics.
// IPIDelivered and Received are written by whichever thread delivers.
type VCPU struct {
	Exits        [NumCauses]atomic.Uint64
	IPISent      [NumIPIKinds]atomic.Uint64 // ICR writes that sent an IPI, by kind
	IPIDelivered [NumIPIKinds]atomic.Uint64 // targets those IPIs reached
	Injected     atomic.Uint64              // vectors injected with KVM_INTERRUPT
	InjectedVec  [256]atomic.Uint64         // the same, by vector
	NMIs         atomic.Uint64              // NMIs injected
	KicksSent    atomic.Uint64              // kicks (signal + immediate_exit) aimed at this vCPU: AVIC's doorbells
	KicksFailed  atomic.Uint64              // kick signals tgkill could not send (the target may run blind until its next exit)
	Wakeups      atomic.Uint64              // times this vCPU left HLT or wait-for-SIPI
	PVEOIs       atomic.Uint64              // EOIs the guest did through PV EOI (no exit)
	// Withdrawn counts injections taken back before the CPU took them
	// (vcpu/syscall.go); Injected and InjectedVec do not include them.
	Withdrawn atomic.Uint64
}

// Inject counts one vector injected with KVM_INTERRUPT.
func (v *VCPU) Inject(vector uint8) {
	v.Injected.Add(1)
	v.InjectedVec[vector].Add(1)
}

// Withdraw takes back the count of an injection of vector that KVM never
// delivered (the VMM withdrew it and will inject it again).
func (v *VCPU) Withdraw(vector uint8) {
	v.Injected.Add(^uint64(0))
	v.InjectedVec[vector].Add(^uint64(0))
	v.Withdrawn.Add(1)
}

// Exit counts one exit of cause c.
func (v *VCPU) Exit(c Cause) { v.Exits[c].Add(1) }

// Snapshot is a plain copy of a vCPU's counters.
type Snapshot struct {
	Exits        [NumCauses]uint64
	IPISent      [NumIPIKinds]uint64
	IPIDelivered [NumIPIKinds]uint64
	Injected     uint64
	InjectedVec  [256]uint64
	NMIs         uint64
	KicksSent    uint64
	KicksFailed  uint64
	Wakeups      uint64
	PVEOIs       uint64
	Withdrawn    uint64
}

// Snapshot copies the counters (each one atomically, the set not).
func (v *VCPU) Snapshot() Snapshot {
	var s Snapshot
	for i := range v.Exits {
		s.Exits[i] = v.Exits[i].Load()
	}
	for i := range v.IPISent {
		s.IPISent[i] = v.IPISent[i].Load()
		s.IPIDelivered[i] = v.IPIDelivered[i].Load()
	}
	s.Injected = v.Injected.Load()
	for i := range v.InjectedVec {
		s.InjectedVec[i] = v.InjectedVec[i].Load()
	}
	s.NMIs = v.NMIs.Load()
	s.KicksSent = v.KicksSent.Load()
	s.KicksFailed = v.KicksFailed.Load()
	s.Wakeups = v.Wakeups.Load()
	s.PVEOIs = v.PVEOIs.Load()
	s.Withdrawn = v.Withdrawn.Load()
	return s
}

// Sub returns s - o, counter by counter.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	d := s
	for i := range d.Exits {
		d.Exits[i] -= o.Exits[i]
	}
	for i := range d.IPISent {
		d.IPISent[i] -= o.IPISent[i]
		d.IPIDelivered[i] -= o.IPIDelivered[i]
	}
	d.Injected -= o.Injected
	for i := range d.InjectedVec {
		d.InjectedVec[i] -= o.InjectedVec[i]
	}
	d.NMIs -= o.NMIs
	d.KicksSent -= o.KicksSent
	d.KicksFailed -= o.KicksFailed
	d.Wakeups -= o.Wakeups
	d.PVEOIs -= o.PVEOIs
	d.Withdrawn -= o.Withdrawn
	return d
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
func (s Snapshot) Sum(from, to Cause) uint64 {
	var t uint64
	for c := from; c < to; c++ {
		t += s.Exits[c]
	}
	return t
}
