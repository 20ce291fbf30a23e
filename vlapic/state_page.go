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
			b[i] = reg(off + pageVecGap*i)
		}
		return b
	}
	lvt := func(i int) uint32 { return reg(pageLVT0 + pageVecGap*i) }
	s := State{Base: base, Mode: modeOf(base), TPR: reg(pageTPR), PPR: reg(pagePPR), LDR: reg(pageLDR), DFR: reg(pageDFR), SVR: reg(pageSVR),
		ISR: vecs(pageISR), TMR: vecs(pageTMR), IRR: vecs(pageIRR), ESR: reg(pageESR),
		ICR: uint64(reg(pageICRHi))<<32 | uint64(reg(pageICRLo)),
		LVT: LVTs{CMCI: reg(pageCMCI), Timer: lvt(lvtTimer), Thermal: lvt(lvtThermal), Perf: lvt(lvtPerf),
			LINT0: lvt(lvtLINT0), LINT1: lvt(lvtLINT1), Error: lvt(lvtError)}}
	s.ID = reg(pageID)
	if s.Mode != ModeX2APIC {
		s.ID >>= 24
	}
	s.Timer = TimerState{Initial: reg(pageTMICT), Current: reg(pageTMCCT), DCR: reg(pageTMDCR)}
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
