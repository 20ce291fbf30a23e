// This file holds the vCPU loop's side of PV EOI: the interface the loop
// calls at its fixed points (package pveoi implements it) and the no-op
// used when PV EOI is off.

package vcpu

import "fmt"

// PVEOI is the vCPU loop's side of PV EOI (package pveoi): the vCPU calls
// these at fixed points, all on its own thread.
type PVEOI interface {
	// Sync completes an EOI the guest did through its PV EOI word: before
	// each entry looks for a vector to inject, in a halt, at a kick. Sync
	// and Complete do nothing unless an offer stands (Pending): the loop
	// calls them only then (pvOffered).
	Sync()
	// Complete takes the offer back at an entry with a vector requested
	// (one held back by the vector in service, or one nested above it):
	// the guest's EOI must then exit, unless the guest already did it,
	// which Complete completes.
	Complete()
	// Offer sets the guest's bit for the vector just injected, which the
	// LAPIC allowed to be EOIed that way (vlapic.LAPIC.AcknowledgePV). An
	// Offer that leaves Pending false means the guest's PV EOI is off: the
	// loop offers nothing more until the guest writes its MSR (pvOff).
	Offer()
	// Retract clears the guest's bit for an injection withdrawn.
	Retract()
	// Pending says whether an offer stands: the guest may yet EOI
	// through its word, which only Sync sees.
	Pending() bool
	// Reset is INIT: PV EOI off, nothing pending.
	Reset()
	// MSR is MSR_KVM_PV_EOI_EN as the guest last wrote it, for a snapshot
	// (after Complete: nothing pending).
	MSR() uint64
	// Restore makes the guest's MSR_KVM_PV_EOI_EN msr again, nothing
	// pending; a value the guest could not have written is refused.
	Restore(msr uint64) error
}

type noPVEOI struct{}

func (noPVEOI) Sync()         {}
func (noPVEOI) Complete()     {}
func (noPVEOI) Offer()        {}
func (noPVEOI) Retract()      {}
func (noPVEOI) Pending() bool { return false }
func (noPVEOI) Reset()        {}
func (noPVEOI) MSR() uint64   { return 0 }
func (noPVEOI) Restore(msr uint64) error {
	if msr != 0 {
		return fmt.Errorf("PV EOI's MSR was %#x, and PV EOI is off in this VM", msr)
	}
	return nil
}

// The loop's calls of its PVEOI. Pending changes only through the calls
// below, all on the vCPU's thread, so pvOffered mirrors it and Sync and
// Complete, which do nothing without an offer, are called only with one:
// a guest that never enabled PV EOI (or a VM without it) costs an entry
// no call into package pveoi, whose code and data are pages of their own
// (loop.go says why pages count).
//
// Each call is a test the compiler inlines into the loop, and a call
// only when there is something to do: as one function with the two
// interface calls it was too big to inline, and its code sat on a page
// of its own after the loop's files (this file's), one page more at
// every entry (scripts/rtt-pages.sh).

func (v *VCPU) pvSync() {
	if v.pvOffered {
		v.pvSyncOffered()
	}
}

func (v *VCPU) pvSyncOffered() {
	v.pveoi.Sync()
	v.pvOffered = v.pveoi.Pending()
}

func (v *VCPU) pvComplete() {
	if v.pvOffered {
		v.pvCompleteOffered()
	}
}

func (v *VCPU) pvCompleteOffered() {
	v.pveoi.Complete()
	v.pvOffered = v.pveoi.Pending()
}

func (v *VCPU) pvOffer() {
	if !v.pvOff {
		v.pvOfferNow()
	}
}

func (v *VCPU) pvOfferNow() {
	v.pveoi.Offer()
	v.pvOffered = v.pveoi.Pending()
	v.pvOff = !v.pvOffered // only a guest's PV EOI off refuses an offer
}

func (v *VCPU) pvRetract() {
	v.pveoi.Retract()
	v.pvOffered = v.pveoi.Pending()
}

func (v *VCPU) pvReset() {
	v.pveoi.Reset()
	v.pvOffered, v.pvOff = v.pveoi.Pending(), false
}

func (v *VCPU) pvRestore(msr uint64) error {
	err := v.pveoi.Restore(msr)
	v.pvOffered, v.pvOff = v.pveoi.Pending(), false
	return err
}
