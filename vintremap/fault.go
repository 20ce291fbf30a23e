// This file implements primary fault recording and the fault event (VT-d
// 7.3): NumFR fault-recording registers used in turn, PPF as the OR of their
// F bits, PFO when the next one is still full, and one fault-event MSI per
// transition from "nothing pending" to "something pending".

package vintremap

// fault refuses a request: it counts it, records it unless fpd suppresses a
// qualified fault, and returns it as the caller's error.
func (u *Unit) fault(reason uint8, index uint32, sid uint16, fpd bool, p *post) Fault {
	f := Fault{Reason: reason, Index: uint16(index), SID: sid}
	u.stats.Faults[reason-ReasonRequestReserved]++
	if fpd && qualified(reason) {
		u.stats.FaultsSuppressed++
		return f
	}
	u.record(f, p)
	return f
}

// qualified reports whether FPD may suppress a fault: those found in a
// present-or-not IRTE, as opposed to those found before one was read.
func qualified(reason uint8) bool {
	return reason == ReasonNotPresent || reason == ReasonIRTEReserved || reason == ReasonSourceID
}

// record writes f into the next fault-recording register. As QEMU does, a
// fault is dropped while PFO is set, and sets PFO when the next register
// still holds an unserviced fault.
func (u *Unit) record(f Fault, p *post) {
	prev := u.fstsValue()
	if prev&FSTSPFO != 0 {
		u.stats.FaultsLost++
		return
	}
	r := &u.fr[u.nextFR]
	if r.hi&frF != 0 {
		u.fsts |= FSTSPFO
		u.stats.FaultsLost++
		return
	}
	r.lo = uint64(f.Index) << 48
	r.hi = frF | uint64(f.Reason)<<32 | uint64(f.SID)
	if prev&FSTSPPF == 0 {
		u.fsts = u.fsts&^fstsFRI | uint32(u.nextFR)<<8
	}
	u.nextFR = (u.nextFR + 1) % NumFR
	u.faultEvent(prev, p)
}

// faultEvent raises the fault event for a new condition, unless one was
// already pending in prev (the FSTS before it): software services them all
// from one interrupt. A masked event stays pending in FECTL.IP.
func (u *Unit) faultEvent(prev uint32, p *post) {
	if prev&(FSTSPFO|FSTSPPF|FSTSIQE) != 0 {
		return
	}
	u.stats.FaultEvents++
	u.fectl |= CtlIP
	if u.fectl&CtlIM == 0 {
		u.fectl &^= CtlIP
		p.add(u.feuaddr, u.feaddr, u.fedata)
	}
}

// fstsValue is FSTS as software reads it.
func (u *Unit) fstsValue() uint32 {
	v := u.fsts
	for i := range u.fr {
		if u.fr[i].hi&frF != 0 {
			v |= FSTSPPF
			break
		}
	}
	return v
}

// writeFSTS clears PFO and IQE (write 1 to clear). Once no condition is left
// a masked, pending event is dropped; clearing IQE lets the queue resume
// from IQH (Linux overwrites the bad descriptor first).
func (u *Unit) writeFSTS(v uint32, p *post) {
	iqe := u.fsts & v & FSTSIQE
	u.fsts &^= v & (FSTSPFO | FSTSIQE)
	if u.fstsValue()&(FSTSPFO|FSTSPPF|FSTSIQE) == 0 {
		u.fectl &^= CtlIP
	}
	if iqe != 0 {
		u.runQueue(p)
	}
}
