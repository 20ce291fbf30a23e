// This file implements the register file (SDM 11.4-11.6, 11.12): reads and
// writes by Register, shared by the xAPIC page and the x2APIC MSRs, with the
// per-register valid-bit masks.

package vlapic

// apicVersion is the version register: version 0x14 (integrated xAPIC) and
// "max LVT entry" 6, i.e. 7 LVTs including CMCI. That is KVM's value when
// the guest's MCG_CAP has CMCI (0x50014 without it); govmm always has the
// CMCI LVT, so it says so. Directed EOI (bit 24) is not offered.
const apicVersion = 0x14 | (nLVT-1)<<16

const (
	svrEnable      = 1 << 8
	esrSendIllegal = 1 << 5
	esrRecvIllegal = 1 << 6
	icrBusy        = 1 << 12
	// x2APIC ICR bits that #GP when set (KVM's X2APIC_ICR_RESERVED_BITS).
	x2ICRReserved = 0xFFF00000 | 3<<16 | 1<<13
)

// LVT indices, in KVM's order.
const (
	lvtTimer = iota
	lvtThermal
	lvtPerf
	lvtLINT0
	lvtLINT1
	lvtError
	lvtCMCI
	nLVT
)

const (
	lvtMasked     = 1 << 16
	lvtPending    = 1 << 12 // delivery status: read-only, always idle
	lvtRemoteIRR  = 1 << 14 // read-only; LINT inputs are not modelled
	lvtDelivMode  = 0x700
	lvtTimerModes = 3 << 17
	lvtLINTBits   = 1<<13 | 1<<15 // polarity, trigger mode
)

// lvtValid holds the bits a guest may write to each LVT; in x2APIC mode any
// other bit set #GPs. Read-only bits are accepted and dropped.
var lvtValid = [nLVT]uint32{
	lvtTimer:   0xFF | lvtPending | lvtMasked | lvtTimerModes,
	lvtThermal: 0xFF | lvtDelivMode | lvtPending | lvtMasked,
	lvtPerf:    0xFF | lvtDelivMode | lvtPending | lvtMasked,
	lvtLINT0:   0xFF | lvtDelivMode | lvtPending | lvtLINTBits | lvtRemoteIRR | lvtMasked,
	lvtLINT1:   0xFF | lvtDelivMode | lvtPending | lvtLINTBits | lvtRemoteIRR | lvtMasked,
	lvtError:   0xFF | lvtPending | lvtMasked,
	lvtCMCI:    0xFF | lvtDelivMode | lvtPending | lvtMasked,
}

func lvtIndex(r Register) (int, bool) {
	switch {
	case r == RegLVTCMCI:
		return lvtCMCI, true
	case r >= RegLVTTimer && r <= RegLVTError:
		return int(r - RegLVTTimer), true
	}
	return 0, false
}

// readLocked reads a 32-bit register; ok is false for registers that do not
// exist (or cannot be read) in the mode x2 selects. The 64-bit x2APIC ICR
// is read by the MSR path.
func (a *LAPIC) readLocked(r Register, x2 bool) (v uint32, ok bool) {
	if i, isLVT := lvtIndex(r); isLVT {
		return a.lvt[i], true
	}
	switch {
	case r == RegID:
		if x2 {
			return uint32(a.cpu), true
		}
		return uint32(a.xid) << 24, true
	case r == RegVersion:
		return apicVersion, true
	case r == RegTPR:
		return a.tpr, true
	case r == RegAPR:
		return 0, !x2
	case r == RegPPR:
		return a.pprv, true
	case r == RegLDR:
		return a.ldr, true
	case r == RegDFR:
		return a.dfr, !x2
	case r == RegSVR:
		return a.svr, true
	case r >= RegISR0 && r < RegISR0+8:
		return a.isr[r-RegISR0], true
	case r >= RegTMR0 && r < RegTMR0+8:
		return a.tmr[r-RegTMR0], true
	case r >= RegIRR0 && r < RegIRR0+8:
		a.foldLocked()
		return a.irr[r-RegIRR0], true
	case r == RegESR:
		return a.esr, true
	case r == RegICR:
		return uint32(a.icr), true
	case r == RegICR2:
		return uint32(a.icr >> 32), !x2
	case r == RegTimerICR:
		return a.t.initial, true
	case r == RegTimerCCR:
		return a.ccrLocked(a.bus.clock.Now()), true
	case r == RegTimerDCR:
		return a.t.dcr, true
	}
	return 0, false
}

// x2Writable returns the valid bits of a register written with WRMSR, or
// false if the register is read-only or absent in x2APIC mode (#GP). ICR and
// SELF_IPI are checked by the MSR path.
func x2Writable(r Register) (uint32, bool) {
	switch r {
	case RegTPR:
		return 0xFF, true
	case RegEOI, RegESR:
		return 0, true // only 0 may be written
	case RegSVR:
		return 0x3FF, true
	case RegTimerICR:
		return 0xFFFFFFFF, true
	case RegTimerDCR:
		return 0xB, true
	}
	if i, ok := lvtIndex(r); ok {
		return lvtValid[i], true
	}
	return 0, false
}

// writeLocked writes a 32-bit register. Invalid bits are dropped (the MSR
// path has already #GP'd on them); writes to read-only or absent registers
// are ignored, as on the xAPIC page. The LVT registers come last: a
// guest's TPR and EOI writes, the exits a busy one makes most, find their
// case first.
func (a *LAPIC) writeLocked(r Register, v uint32, x2 bool, p *post) {
	switch r {
	case RegID:
		if !x2 {
			a.xid = uint8(v >> 24)
			p.rebuild = a.publishLocked()
		}
	case RegTPR:
		a.tpr = v & 0xFF
		a.updatePPRLocked()
	case RegEOI:
		a.eoiLocked(p, true)
	case RegLDR:
		if !x2 {
			a.ldr = v & 0xFF000000
			p.rebuild = a.publishLocked()
		}
	case RegDFR:
		if !x2 {
			a.dfr = v | 0x0FFFFFFF
			p.rebuild = a.publishLocked()
		}
	case RegSVR:
		a.foldLocked() // posted vectors are accepted or dropped by the old state
		a.svr = v & 0x3FF
		if a.svr&svrEnable == 0 {
			for i := range a.lvt {
				a.lvt[i] |= lvtMasked
			}
		}
		a.publishLocked()
	case RegESR:
		// Hardware latches the errors seen since the last write.
		a.esr, a.esrAcc = a.esrAcc, 0
	case RegICR:
		if !x2 {
			a.icr = a.icr&^0xFFFFFFFF | uint64(v&^icrBusy)
			a.sendLocked(a.icr, false, p)
		}
	case RegICR2:
		if !x2 {
			a.icr = a.icr&0xFFFFFFFF | uint64(v&0xFF000000)<<32
		}
	case RegTimerICR:
		a.writeTimerICRLocked(v)
	case RegTimerDCR:
		a.writeDCRLocked(v & 0xB)
	default:
		if i, ok := lvtIndex(r); ok {
			a.writeLVTLocked(i, v)
		}
	}
}

func (a *LAPIC) writeLVTLocked(i int, v uint32) {
	if a.svr&svrEnable == 0 {
		v |= lvtMasked
	}
	v &= lvtValid[i] &^ (lvtPending | lvtRemoteIRR)
	if i == lvtTimer {
		a.writeLVTTimerLocked(v)
		return
	}
	a.lvt[i] = v
}

// sendLocked starts an IPI from an ICR or SELF_IPI write: the delivery
// itself runs in finish, after the sender's lock is dropped.
func (a *LAPIC) sendLocked(icr uint64, x2 bool, p *post) {
	m := DecodeICR(icr, x2)
	m.Source = a.cpu
	m.Trace = a.bus.obs.Sending(a.cpu, m, x2)
	if (m.Delivery == Fixed || m.Delivery == LowestPriority) && m.Vector < 16 {
		// Sent anyway, so the receiver flags it too, as hardware does.
		if a.errorLocked(esrSendIllegal) {
			p.notify = true
		}
	}
	p.send, p.msg = true, m
}
