// This file implements interrupt priority and acceptance by the CPU (SDM
// 11.8.3-11.8.5): PPR, the pending vector, the INTA cycle, EOI, and the
// CR8 view of TPR.

package vlapic

// updatePPRLocked recomputes PPR from TPR and the highest in-service vector.
func (a *LAPIC) updatePPRLocked() {
	isrv, _ := a.isr.highest()
	ppr := a.tpr
	if a.tpr&0xF0 < uint32(isrv)&0xF0 {
		ppr = uint32(isrv) & 0xF0
	}
	a.pprv = ppr
	a.ppr.Store(ppr)
}

// pendingLocked returns the highest IRR vector whose priority class is above
// PPR's, if the LAPIC is enabled in hardware and software. It folds the
// AVIC backing page first, so a posted vector counts as requested.
func (a *LAPIC) pendingLocked() (uint8, bool) {
	v, ok, _ := a.requestLocked()
	return v, ok
}

// requestLocked is pendingLocked, and whether IRR holds any vector at all,
// deliverable or held back by PPR (requested).
func (a *LAPIC) requestLocked() (v uint8, deliverable, requested bool) {
	a.foldLocked()
	if a.mode == ModeDisabled || a.svr&svrEnable == 0 {
		return 0, false, false
	}
	v, requested = a.irr.highest()
	if !requested || uint32(v)&0xF0 <= a.pprv&0xF0 {
		return 0, false, requested
	}
	return v, true, true
}

// PendingVector returns the vector the LAPIC would present to its CPU now,
// if any: the highest requested vector whose priority class is above PPR's.
// Vectors posted to the AVIC backing page are folded into IRR first: the
// VMM's checks before entry and on halt see every interrupt delivered
// before the Sink was notified.
func (a *LAPIC) PendingVector() (uint8, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pendingLocked()
}

// Acknowledge is the INTA cycle: it moves the pending vector from IRR to ISR
// and returns it. The VMM calls it when it injects the vector.
func (a *LAPIC) Acknowledge() (uint8, bool) {
	k := a.AcknowledgePV()
	return k.Vector, k.OK
}

// Ack is what an acknowledgement (AcknowledgePV) tells the CPU's loop:
// the vector now in service and whether it may end with a paravirtual EOI.
type Ack struct {
	Vector uint8
	OK     bool // a vector was pending and is in service now
	// PVEOI (KVM's PV EOI rule, apic_sync_pv_eoi_to_guest): the vector is
	// edge-triggered (TMR clear: no IOAPIC waits for its EOI) and nothing
	// else is requested in IRR or posted to the AVIC backing page, so a
	// lazy EOI cannot hold anything back.
	PVEOI bool
}

// AcknowledgePV is the INTA cycle as the vCPU loop does it before entry:
// Acknowledge, and whether the vector may end with a PV EOI (Ack), under
// one lock.
func (a *LAPIC) AcknowledgePV() Ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.pendingLocked()
	if !ok {
		return Ack{}
	}
	a.irr.clear(v)
	a.isr.set(v)
	a.updatePPRLocked()
	a.bus.obs.Acknowledged(a.cpu, v)
	_, requested := a.irr.highest()
	return Ack{Vector: v, OK: true, PVEOI: !a.tmr.test(v) && !requested && !a.pir.any()}
}

// Unacknowledge undoes Acknowledge of v when the VMM withdrew the injection
// before the CPU took the interrupt: v, which must be the highest vector in
// service, leaves ISR and is requested again. Anything else is ignored.
func (a *LAPIC) Unacknowledge(v uint8) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if top, ok := a.isr.highest(); !ok || top != v {
		return
	}
	a.isr.clear(v)
	a.irr.set(v)
	a.updatePPRLocked()
	a.bus.obs.Unacknowledged(a.cpu, v)
}

// EOI ends the highest in-service interrupt, as a write of 0 to the EOI
// register does (the VMM uses it for paravirtual EOI).
func (a *LAPIC) EOI() {
	var p post
	a.mu.Lock()
	a.eoiLocked(&p, false)
	a.mu.Unlock()
	a.finish(&p, &Effect{})
}

// eoiLocked ends the highest in-service vector; byWrite: the guest wrote
// the EOI register (an exit), rather than a PV EOI.
func (a *LAPIC) eoiLocked(p *post, byWrite bool) {
	v, ok := a.isr.highest()
	if !ok {
		return
	}
	a.isr.clear(v)
	a.bus.obs.Ended(a.cpu, v, byWrite)
	if a.tmr.test(v) {
		p.eoi, p.eoiVec = true, v
	}
	a.updatePPRLocked()
}

// CR8 returns TPR[7:4], the guest's CR8.
func (a *LAPIC) CR8() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return uint64(a.tpr >> 4)
}

// SetCR8 sets TPR[7:4] from CR8[3:0]. TPR[3:0] is kept when the class does
// not change, so that syncing an unchanged CR8 back loses nothing.
func (a *LAPIC) SetCR8(v uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uint64(a.tpr>>4) != v&0xF {
		a.tpr = uint32(v&0xF) << 4
		a.updatePPRLocked()
	}
}

// Pending is what a LAPIC has for its CPU at one look, as the vCPU loop
// decides from it: the latched NMI, INIT, SIPI (with its vector) and
// ExtINT, and the highest deliverable fixed vector.
type Pending struct {
	Events
	Vector uint8 // the vector PendingVector returns, when Fixed
	Fixed  bool  // a fixed vector is deliverable (above PPR)
	// Requested: IRR holds a vector, deliverable or held back by PPR (a
	// vector in service above it, or TPR). A PV EOI offer may not stand
	// over one (vcpu's prepareEntry).
	Requested bool
}

// TakePending takes (clears) the latched events, as TakeEvents does, and
// looks for the vector to present, as PendingVector does (folding the AVIC
// backing page first), under one lock.
func (a *LAPIC) TakePending() Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := Pending{Events: a.ev}
	a.ev = Events{}
	p.Vector, p.Fixed, p.Requested = a.requestLocked()
	return p
}

// Work says whether p has something for the CPU to act on: a vector, an
// NMI, an INIT or a SIPI (an ExtINT is not: there is no 8259 to ask).
func (p Pending) Work() bool { return p.Fixed || p.NMIs > 0 || p.SMI || p.INIT || p.SIPI }

// NeedsWindow says whether the CPU must ask for an interrupt window: a
// vector is deliverable, and the CPU cannot take it now (allowed: RFLAGS.IF
// set, no interrupt shadow, no event already queued; the loop knows).
func (p Pending) NeedsWindow(allowed bool) bool { return p.Fixed && !allowed }

// Wakes says whether p ends a HLT executed with RFLAGS.IF = ifFlag: an
// NMI, an SMI, an INIT, or a vector the CPU can take.
func (p Pending) Wakes(ifFlag bool) bool { return p.NMIs > 0 || p.SMI || p.INIT || p.Fixed && ifFlag }
