// This file implements the two requests an interrupt can arrive as (VT-d
// 5.1): an MSI write and an IOAPIC redirection entry, each in compatibility
// or remappable format.

package vintremap

import (
	"github.com/govmm/govmm/vioapic"
	"github.com/govmm/govmm/vlapic"
)

// MSI address bits.
const (
	msiRemappable = 1 << 4
	msiSHV        = 1 << 3
	msiHandle15   = 1 << 2
)

// RTE bits.
const (
	rteRemappable = 1 << 48
	rteIndex15    = 1 << 11
)

// TranslateMSI translates an MSI write (addr, data) from requester sid
// (bus<<8 | dev<<3 | fn).
//
// With remapping off, every MSI is compatibility format and passes as is. With
// it on, a remappable-format MSI (address bit 4) goes through the IRTE at
// handle (address 19:5, bit 15 in address bit 2) plus, when SHV (address bit
// 3) is set, the subhandle in data 15:0. A compatibility-format MSI passes
// only while GSTS.CFIS is set and the table is not in x2APIC mode (EIME), and
// is blocked with a fault otherwise (VT-d 5.1.2.1).
func (u *Unit) TranslateMSI(addr uint64, data uint32, sid uint16) (vlapic.Message, error) {
	if addr>>20 != 0xFEE {
		return vlapic.Message{}, ErrNotInterrupt
	}
	var p post
	u.mu.Lock()
	m, err := u.translateMSI(uint32(addr), data, sid, &p)
	u.unlock(&p)
	return m, err
}

func (u *Unit) translateMSI(addr, data uint32, sid uint16, p *post) (vlapic.Message, error) {
	if addr&msiRemappable == 0 || u.gsts&gIRE == 0 {
		if err := u.compatible(sid, p); err != nil {
			return vlapic.Message{}, err
		}
		return vlapic.DecodeCompatMSI(addr, data), nil
	}
	index := addr>>5&0x7FFF | addr&msiHandle15<<13
	if data>>16 != 0 {
		return vlapic.Message{}, u.fault(ReasonRequestReserved, index, sid, false, p)
	}
	if addr&msiSHV != 0 {
		index += data & 0xFFFF
	}
	return u.remap(index, sid, p)
}

// TranslateIOAPIC translates a redirection entry fired by the IOAPIC whose
// source-id is sid. A remappable entry (bit 48) goes through the IRTE at its
// index (63:49, bit 15 in bit 11); its vector field only serves the IOAPIC's
// EOI matching and its trigger the Remote IRR, so the message takes both from
// the IRTE. A compatibility entry follows the rules of TranslateMSI.
func (u *Unit) TranslateIOAPIC(rte uint64, sid uint16) (vlapic.Message, error) {
	var p post
	u.mu.Lock()
	m, err := u.translateIOAPIC(rte, sid, &p)
	u.unlock(&p)
	return m, err
}

func (u *Unit) translateIOAPIC(rte uint64, sid uint16, p *post) (vlapic.Message, error) {
	if rte&rteRemappable == 0 || u.gsts&gIRE == 0 {
		if err := u.compatible(sid, p); err != nil {
			return vlapic.Message{}, err
		}
		return vioapic.DecodeRTE(rte), nil
	}
	index := uint32(rte>>49) | uint32(rte&rteIndex15)<<4
	return u.remap(index, sid, p)
}

// compatible decides the fate of a compatibility-format request: it passes
// with remapping off, or on with CFIS set and EIME clear.
func (u *Unit) compatible(sid uint16, p *post) error {
	if u.gsts&gIRE != 0 && (u.gsts&gCFI == 0 || u.irt.eime) {
		return u.fault(ReasonCompatBlocked, 0, sid, false, p)
	}
	u.stats.Passthrough++
	return nil
}
