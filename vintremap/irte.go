// This file decodes interrupt-remapping table entries (VT-d 9.10, remapped
// format; the posted format is not supported).

package vintremap

import (
	"encoding/binary"

	"github.com/govmm/govmm/vlapic"
)

// IRTE fields, low qword.
const (
	irteP    = 1 << 0
	irteFPD  = 1 << 1
	irteDM   = 1 << 2
	irteRH   = 1 << 3
	irteTM   = 1 << 4
	irteDLM  = 7 << 5
	irteIM   = 1 << 15 // posted: reserved without CAP.PI
	irteRsvd = 0x7<<12 | irteIM | 0xFF<<24
	// In xAPIC mode only DST bits 15:8 (47:40) hold the APIC ID.
	irteXAPICRsvd = 0xFF<<32 | 0xFFFF<<48
)

// IRTE fields, high qword.
const (
	irteSQ     = 3 << 16
	irteSVT    = 3 << 18
	irteHiRsvd = ^uint64(0xF_FFFF) // 127:84
)

// Source-validation types.
const (
	svtNone = 0
	svtSID  = 1 // compare the SID under the SQ mask
	svtBus  = 2 // requester bus in [SID 15:8, SID 7:0]
)

// sqIgnore is the SID bits SQ leaves out of the comparison: none, function
// bit 2, function bits 2:1, or the whole function.
var sqIgnore = [4]uint16{0, 4, 6, 7}

// remap translates through IRTE index for requester sid.
func (u *Unit) remap(index uint32, sid uint16, p *post) (vlapic.Message, error) {
	if index >= u.irt.entries {
		return vlapic.Message{}, u.fault(ReasonIndexOverflow, index, sid, false, p)
	}
	if u.mem.ReadGPA(u.irt.addr+uint64(index)*16, u.buf[:]) != nil {
		return vlapic.Message{}, u.fault(ReasonTableAccess, index, sid, false, p)
	}
	lo := binary.LittleEndian.Uint64(u.buf[:8])
	hi := binary.LittleEndian.Uint64(u.buf[8:])
	fpd := lo&irteFPD != 0
	if lo&irteP == 0 {
		return vlapic.Message{}, u.fault(ReasonNotPresent, index, sid, fpd, p)
	}
	if reason := u.checkIRTE(lo, hi, sid); reason != 0 {
		return vlapic.Message{}, u.fault(reason, index, sid, fpd, p)
	}
	u.stats.Translations++
	m := vlapic.Message{
		Vector:   uint8(lo >> 16),
		Delivery: vlapic.DeliveryMode(lo & irteDLM >> 5),
		DestMode: vlapic.DestMode(lo & irteDM >> 2),
		Trigger:  vlapic.Trigger(lo & irteTM >> 4),
		Assert:   true,
		Dest:     uint32(lo >> 32),
		Source:   -1,
	}
	if !u.irt.eime {
		m.Dest = uint32(lo >> 40 & 0xFF)
	}
	vlapic.RedirectionHint(&m, lo&irteRH != 0)
	return m, nil
}

// checkIRTE returns the fault reason of a present entry, or 0.
func (u *Unit) checkIRTE(lo, hi uint64, sid uint16) uint8 {
	rsvd := uint64(irteRsvd)
	if !u.irt.eime {
		rsvd |= irteXAPICRsvd
	}
	switch dlm := lo & irteDLM >> 5; {
	case lo&rsvd != 0 || hi&irteHiRsvd != 0, dlm == 3, dlm == 6:
		return ReasonIRTEReserved
	}
	want := uint16(hi)
	switch hi & irteSVT >> 18 {
	case svtNone:
	case svtSID:
		mask := ^sqIgnore[hi&irteSQ>>16]
		if sid&mask != want&mask {
			return ReasonSourceID
		}
	case svtBus:
		if bus := uint8(sid >> 8); bus < uint8(want>>8) || bus > uint8(want) {
			return ReasonSourceID
		}
	default:
		return ReasonSourceID // SVT 3 is reserved
	}
	return 0
}
