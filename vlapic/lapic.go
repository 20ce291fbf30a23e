// This file implements the LAPIC type: its state, the power-on/INIT reset
// (SDM 11.4.7.1, 11.4.7.3), the plain accessors, and the "after unlock" step
// that runs what a register access caused (route rebuild, EOI broadcast,
// notification, IPI) with no lock held.

package vlapic

import (
	"sync"
	"sync/atomic"
)

// LAPIC is one vCPU's local APIC.
//
// Locking rule: every register, the IRR/ISR/TMR bitmaps, the timer and the
// latched Events are guarded by mu. On the plain path Bus.Deliver takes the
// target's mu to set an IRR bit. In AVIC mode a fixed or lowest-priority
// edge interrupt is instead ORed into pir by the sender with no lock, and
// only a holder of mu takes bits out of pir (foldLocked, which every method
// that reads IRR or looks for a pending vector calls first). key, fixedOK
// and ppr are atomic mirrors written under mu and read without it by the
// Bus (routing rebuilds, lowest-priority arbitration and AVIC posting), so
// that no path ever holds two LAPIC locks; page is one too, read by the
// vCPU at each MMIO exit (PageBase).
type LAPIC struct {
	bus *Bus
	cpu int

	key     atomic.Uint32 // routing identity: see makeKey
	fixedOK atomic.Bool   // enabled in hardware and software: takes Fixed
	ppr     atomic.Uint32 // mirror of pprv
	page    atomic.Uint64 // the xAPIC page's base | 1 in xAPIC mode, else 0
	lpWins  atomic.Uint64 // lowest-priority interrupts won, for tie-breaking
	pir     pir           // AVIC IRR backing page: any sender ORs, mu holders fold

	mu     sync.Mutex
	base   uint64
	mode   Mode
	xid    uint8 // xAPIC ID; the x2APIC ID is always cpu
	ldr    uint32
	dfr    uint32
	svr    uint32
	tpr    uint32
	pprv   uint32
	irr    vec256
	isr    vec256
	tmr    vec256
	esr    uint32 // readable ESR, latched from esrAcc by an ESR write
	esrAcc uint32
	lvt    [nLVT]uint32
	icr    uint64 // x2APIC ICR; in xAPIC mode ICR2 is in bits 63:32
	t      timer
	ev     Events
}

// resetLocked puts every register except the APIC ID, APIC_BASE and the
// mode to its power-on value, as an INIT does. In x2APIC mode the LDR stays
// derived from the ID.
func (a *LAPIC) resetLocked() {
	a.ldr = 0
	if a.mode == ModeX2APIC {
		a.ldr = x2LDR(uint32(a.cpu))
	}
	a.dfr = 0xFFFFFFFF
	a.svr = 0xFF
	a.tpr = 0
	a.irr, a.isr, a.tmr = vec256{}, vec256{}, vec256{}
	a.bus.obs.Reset(a.cpu)
	a.pir.discard()
	a.esr, a.esrAcc = 0, 0
	for i := range a.lvt {
		a.lvt[i] = lvtMasked
	}
	a.icr = 0
	a.t = timer{div: 2}
	a.updatePPRLocked()
}

// x2LDR is the read-only x2APIC logical ID of APIC ID id (SDM 11.12.10.2).
func x2LDR(id uint32) uint32 { return (id>>4)<<16 | 1<<(id&0xF) }

// makeKey packs what routing needs to know of a LAPIC into 32 bits:
// mode (bits 1:0), DFR model (7:4), xAPIC ID (15:8), xAPIC LDR (23:16).
func makeKey(mode Mode, model, xid, ldr uint8) uint32 {
	return uint32(mode) | uint32(model&0xF)<<4 | uint32(xid)<<8 | uint32(ldr)<<16
}

func keyMode(k uint32) Mode   { return Mode(k & 3) }
func keyModel(k uint32) uint8 { return uint8(k>>4) & 0xF }
func keyXID(k uint32) uint8   { return uint8(k >> 8) }
func keyLDR(k uint32) uint8   { return uint8(k >> 16) }

// publishLocked refreshes the atomic mirrors and reports whether the routing
// key changed, in which case the caller must rebuild the routes after
// unlocking.
func (a *LAPIC) publishLocked() bool {
	k := makeKey(a.mode, uint8(a.dfr>>28), a.xid, uint8(a.ldr>>24))
	a.fixedOK.Store(a.mode != ModeDisabled && a.svr&svrEnable != 0)
	a.publishPageLocked()
	return a.key.Swap(k) != k
}

// post collects what a locked register access caused, to be run by finish
// once the lock is dropped.
type post struct {
	rebuild bool
	notify  bool
	eoi     bool
	send    bool
	eoiVec  uint8
	msg     Message
}

// finish does what a write posted (p), with no lock held: the routes'
// rebuild, the IOAPIC's EOI, the notification, the IPI's delivery. eff
// is the caller's Effect, filled in place (an x2APIC write's exit
// returns it: copied in and out, its Message cost a TPR write a few dozen
// instructions).
func (a *LAPIC) finish(p *post, eff *Effect) {
	b := a.bus
	if p.rebuild {
		b.rebuild()
	}
	if p.eoi {
		if h := b.eoi.Load(); h != nil {
			(*h)(p.eoiVec)
		}
	}
	if p.notify {
		b.sink.Notify(a.cpu)
	}
	if p.send {
		eff.IPI = true
		eff.Msg = p.msg
		eff.Targets = b.Deliver(p.msg)
		b.obs.Sent(a.cpu, p.msg.Trace, eff.Targets)
	}
}

// CPU returns the index of the LAPIC's CPU on its Bus.
func (a *LAPIC) CPU() int { return a.cpu }

// ID returns the APIC ID as the current mode shows it: the 8-bit xAPIC ID
// (writable by the guest) or the 32-bit x2APIC ID, which is the CPU index.
func (a *LAPIC) ID() uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.idLocked()
}

func (a *LAPIC) idLocked() uint32 {
	if a.mode == ModeX2APIC {
		return uint32(a.cpu)
	}
	return uint32(a.xid)
}

// Mode returns the mode selected by APIC_BASE.
func (a *LAPIC) Mode() Mode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

// TakeEvents returns and clears the latched NMI, INIT, SIPI and ExtINT.
func (a *LAPIC) TakeEvents() Events {
	a.mu.Lock()
	e := a.ev
	a.ev = Events{}
	a.mu.Unlock()
	return e
}

// InitReset is the LAPIC half of an INIT: every register goes back to its
// power-on value except the APIC ID, APIC_BASE (so the mode) and latched
// events, which the VMM takes separately (a SIPI may already be latched).
func (a *LAPIC) InitReset() {
	a.mu.Lock()
	a.resetLocked()
	rebuild := a.publishLocked()
	a.mu.Unlock()
	if rebuild {
		a.bus.rebuild()
	}
}
