// This file decodes a LAPIC register page as the architecture lays it out
// (the xAPIC MMIO page, SDM Vol. 3 Table 11-1): the form in which KVM's
// in-kernel LAPIC gives its state (KVM_GET_LAPIC), for dumps and reports
// of a VM run with --lapic=kvm.

package vlapic

import "encoding/binary"

// StateFromPage decodes the first 1 KiB of a LAPIC register page, with
// APIC_BASE base, into a State (CPU, Posted, Timer's deadline and Events
// are left zero: the page has none of them). In x2APIC mode the ID
// register holds the whole 32-bit ID (as KVM stores it with
// KVM_X2APIC_API_USE_32BIT_IDS); in xAPIC mode its bits 31:24.
func StateFromPage(page []byte, base uint64) State {
	reg := func(off int) uint32 {
		if off+4 > len(page) {
			return 0
		}
		return binary.LittleEndian.Uint32(page[off:])
	}
	vecs := func(off int) (b [8]uint32) {
		for i := range b {
			b[i] = reg(off + 0x10*i)
		}
		return b
	}
	s := State{Base: base, Mode: modeOf(base), TPR: reg(0x80), PPR: reg(0xA0), LDR: reg(0xD0), DFR: reg(0xE0), SVR: reg(0xF0),
		ISR: vecs(0x100), TMR: vecs(0x180), IRR: vecs(0x200), ESR: reg(0x280),
		ICR: uint64(reg(0x310))<<32 | uint64(reg(0x300)),
		LVT: LVTs{CMCI: reg(0x2F0), Timer: reg(0x320), Thermal: reg(0x330), Perf: reg(0x340), LINT0: reg(0x350), LINT1: reg(0x360), Error: reg(0x370)}}
	s.ID = reg(0x20)
	if s.Mode != ModeX2APIC {
		s.ID >>= 24
	}
	s.Timer = TimerState{Initial: reg(0x380), Current: reg(0x390), DCR: reg(0x3E0)}
	return s
}

// modeOf is the mode APIC_BASE's EN and EXTD bits select.
func modeOf(base uint64) Mode {
	switch {
	case base&BaseEN == 0:
		return ModeDisabled
	case base&BaseEXTD != 0:
		return ModeX2APIC
	}
	return ModeXAPIC
}
