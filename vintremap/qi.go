// This file implements queued invalidation (VT-d 6.5.2) with 128-bit
// descriptors: a ring of 2^(QS+8) descriptors in guest memory, consumed from
// IQH up to IQT whenever software moves IQT, synchronously.

package vintremap

import "encoding/binary"

// Descriptor types (bits 3:0; bits 11:9 extend the type and must be 0 here).
const (
	descContext = 0x1
	descIOTLB   = 0x2
	descIEC     = 0x4
	descWait    = 0x5
)

// Reserved bits of the descriptors that are checked.
const (
	iecRsvd0  = 0xFFFF_0000_07FF_F1E0 // all but type, G (4), IM (31:27), IIDX (47:32)
	waitRsvd0 = 0x0000_0000_FFFF_F180 // 31:12, 8 and PD (7: no page requests)
	waitRsvd1 = 0x3
	waitIF    = 1 << 4
	waitSW    = 1 << 5
)

// enableQueue latches IQA and sets QIES. A tail already past the head is a
// spec violation Windows commits; like QEMU, run it at once.
func (u *Unit) enableQueue(p *post) {
	u.iq = queue{
		addr: u.iqaReg & addrMask,
		size: 256 << (u.iqaReg & iqaQS),
	}
	u.gsts |= gQIE
	u.runQueue(p)
}

// runQueue processes descriptors from IQH to IQT. It stops at the first bad
// one with IQH pointing at it and FSTS.IQE set; nothing more runs until
// software clears IQE. A tail beyond the queue is an error too.
func (u *Unit) runQueue(p *post) {
	if u.gsts&gQIE == 0 || u.fsts&FSTSIQE != 0 || u.iqh == u.iqt {
		return
	}
	if u.iqt >= u.iq.size || u.iqh >= u.iq.size {
		u.queueError(p)
		return
	}
	for u.iqh != u.iqt {
		if !u.execute(u.iq.addr+uint64(u.iqh)*16, p) {
			u.queueError(p)
			return
		}
		u.iqh = (u.iqh + 1) % u.iq.size
	}
}

// execute carries out the descriptor at gpa and reports whether it was valid.
func (u *Unit) execute(gpa uint64, p *post) bool {
	if u.mem.ReadGPA(gpa, u.buf[:]) != nil {
		return false
	}
	q0 := binary.LittleEndian.Uint64(u.buf[:8])
	q1 := binary.LittleEndian.Uint64(u.buf[8:])
	if q0>>9&7 != 0 {
		return false // a 256-bit-only type
	}
	switch q0 & 0xF {
	case descContext, descIOTLB:
		// No DMA remapping: nothing cached, nothing to drop.
		u.stats.OtherInvalidations++
		return true
	case descIEC:
		// Global (G=0) or 2^IM entries from IIDX (G=1). No entry cache:
		// the next translation reads the IRTE from memory anyway.
		if q0&iecRsvd0 != 0 || q1 != 0 {
			return false
		}
		u.stats.IECInvalidations++
		return true
	case descWait:
		return u.wait(q0, q1, p)
	}
	return false
}

// wait carries out an invalidation-wait descriptor: all earlier descriptors
// are complete (everything is synchronous, so FN needs nothing), SW writes
// the status data to the status address, IF raises the completion event.
func (u *Unit) wait(q0, q1 uint64, p *post) bool {
	if q0&waitRsvd0 != 0 || q1&waitRsvd1 != 0 {
		return false
	}
	if q0&waitSW != 0 {
		binary.LittleEndian.PutUint32(u.buf[:4], uint32(q0>>32))
		if u.mem.WriteGPA(q1&^3, u.buf[:4]) != nil {
			return false
		}
	}
	if q0&waitIF != 0 {
		u.completionEvent(p)
	}
	u.stats.WaitDescriptors++
	return true
}

// completionEvent sets ICS.IWC and raises the invalidation completion event
// if IWC was clear (VT-d 6.5.2.8); a masked event stays pending in IECTL.IP.
func (u *Unit) completionEvent(p *post) {
	if u.ics&ICSIWC != 0 {
		return
	}
	u.ics |= ICSIWC
	u.stats.CompletionEvents++
	u.iectl |= CtlIP
	if u.iectl&CtlIM == 0 {
		u.iectl &^= CtlIP
		p.add(u.ieuaddr, u.ieaddr, u.iedata)
	}
}

// queueError sets FSTS.IQE and raises the fault event for it.
func (u *Unit) queueError(p *post) {
	prev := u.fstsValue()
	u.fsts |= FSTSIQE
	u.stats.QueueErrors++
	u.faultEvent(prev, p)
}
