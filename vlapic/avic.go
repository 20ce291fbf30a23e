// This file implements AVIC-style delivery (Options.AVIC), modelled on AMD's
// Advanced Virtual Interrupt Controller (AMD64 APM vol. 2, 15.29): a sender
// posts a fixed or lowest-priority edge interrupt into the target's IRR
// backing page with one atomic OR and never takes the target's lock; the
// target folds the page into IRR, under its own lock, before it looks for
// a deliverable interrupt.
//
// How the AVIC pieces map onto govmm:
//   - vAPIC backing page, IRR part: LAPIC.pir, 256 bits as four atomic
//     64-bit words (word i, bit b is vector 64i+b).
//   - Physical and logical APIC ID tables: the copy-on-write routing tables
//     of routes.go, loaded with one atomic read per delivery. They are
//     rebuilt whole when an ID, LDR, DFR or mode changes (AVIC: the VMM
//     rewrites the table entry on the same events).
//   - IsRunning bit and doorbell: the vCPU state the VMM keeps (package
//     vcpu: StateGuest) and its kick. Sink.Notify is the doorbell; for a
//     vCPU not in the guest it is AVIC's "incomplete IPI" path: the VMM wakes
//     a halted vCPU and does nothing for one in the VMM, which folds before
//     it enters the guest.
//
// What stays on the locked path (accept, deliver.go), as AVIC leaves them to
// the VMM too: level-triggered interrupts, NMI, INIT, SIPI, ExtINT, SMI,
// illegal vectors (< 16, they set ESR) and the LAPIC's own LVT interrupts.
//
// Left out of AVIC proper: the ISR/TPR/EOI acceleration of the backing page
// (govmm's PV EOI gives the exitless edge EOI instead) and the hardware
// doorbell MSR (a kick is a signal to the vCPU thread).

package vlapic

import "sync/atomic"

// pir is the IRR half of the vAPIC backing page (Intel calls its equivalent
// the posted-interrupt request bitmap). Any goroutine may set bits with post;
// only a holder of the owning LAPIC's mu clears them, with fold or discard.
// Each word is independent: there is no summary bit to keep in step, so the
// page needs no lock of its own.
type pir struct {
	w [4]atomic.Uint64
	// The senders of a busy target write these words; keep them off the
	// cache lines of the neighbouring LAPICs' fields.
	_ [64 - 4*8]byte
}

// post sets vector v and reports whether the bit was clear. If it was
// already set, the sender that set it has yet to see it folded and will
// notify the owner (or has, and the owner's fold comes after this post), so
// the caller need not notify again.
func (p *pir) post(v uint8) bool {
	bit := uint64(1) << (v & 63)
	return p.w[v>>6].Or(bit)&bit == 0
}

// any reports whether a vector is posted and not yet folded.
func (p *pir) any() bool {
	return p.w[0].Load()|p.w[1].Load()|p.w[2].Load()|p.w[3].Load() != 0
}

// peek returns the posted vectors in IRR register layout, without taking
// them (for Snapshot).
func (p *pir) peek() vec256 {
	var v vec256
	for i := range p.w {
		w := p.w[i].Load()
		v[2*i], v[2*i+1] = uint32(w), uint32(w>>32)
	}
	return v
}

// discard drops every posted vector (INIT, hardware disable).
func (p *pir) discard() {
	for i := range p.w {
		p.w[i].Store(0)
	}
}

// postEdge is the lock-free half of accept for a fixed or lowest-priority
// edge interrupt with a legal vector in AVIC mode. It reads the LAPIC's
// enable state through the atomic mirror fixedOK, as lowest-priority
// arbitration already does; a LAPIC disabled between that load and the OR
// drops the vector at its next fold (foldLocked).
func (a *LAPIC) postEdge(v uint8, t Trace) (acc, notify bool) {
	if !a.fixedOK.Load() {
		return false, false
	}
	// Observed before the post: once posted, the target may acknowledge
	// the vector, and the observer must know of it by then.
	a.observeAccepted(v, t)
	return true, a.pir.post(v)
}

// foldLocked moves the posted vectors into IRR, each word with one atomic
// swap, so a vector posted once lands in IRR exactly once. Posted vectors
// are edge-triggered: their TMR bits clear, as accept does for an edge
// interrupt. A LAPIC that is disabled (in hardware or software) now would
// have refused them: they are dropped. Every method that looks for a
// deliverable interrupt, reads IRR or changes what the LAPIC accepts calls
// it first; in plain mode the page stays empty and this returns at once.
func (a *LAPIC) foldLocked() {
	if !a.bus.avic {
		return
	}
	for i := range a.pir.w {
		if a.pir.w[i].Load() == 0 {
			continue
		}
		w := a.pir.w[i].Swap(0)
		if a.mode == ModeDisabled || a.svr&svrEnable == 0 {
			a.observeRefused(i, w)
			continue
		}
		lo, hi := uint32(w), uint32(w>>32)
		a.irr[2*i] |= lo
		a.irr[2*i+1] |= hi
		a.tmr[2*i] &^= lo
		a.tmr[2*i+1] &^= hi
	}
}

// AVIC reports whether the Bus posts edge interrupts lock-free (Options.AVIC).
func (b *Bus) AVIC() bool { return b.avic }
