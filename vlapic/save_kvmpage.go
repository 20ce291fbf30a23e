// This file converts a LAPIC's saved state to and from the register page
// KVM's in-kernel LAPIC is saved and restored as (KVM_GET_LAPIC,
// KVM_SET_LAPIC): what a snapshot taken on one APIC needs to go on on the
// other (govmm restore --lapic). The page is the xAPIC MMIO page's first
// KiB (SDM Vol. 3 Table 11-1), with the timer's current count (TMCCT)
// standing for the time left: KVM's kvm_apic_set_state restarts the timer
// from it (__start_apic_timer(apic, APIC_TMCCT), arch/x86/kvm/lapic.c).

package vlapic

import (
	"encoding/binary"
	"fmt"
	"math"
)

// KVMPageSize is the size of KVM's LAPIC register page (struct
// kvm_lapic_state).
const KVMPageSize = 1024

// KVM's APIC timer counts at 1 GHz (APIC_BUS_CYCLE_NS, 1 ns, in
// arch/x86/kvm/lapic.h), as govmm's does (vmm builds its LAPICs with
// BusHz 1e9): a count of c with divider d is c*d ns on either APIC, so a
// guest that calibrated its timer on one finds the same period on the
// other.
const kvmBusCycleNS = 1

// The page's registers govmm reads and moves (offsets in the xAPIC page;
// StateFromPage's too).
const (
	pageID     = 0x20
	pageVer    = 0x30
	pageTPR    = 0x80
	pagePPR    = 0xA0
	pageLDR    = 0xD0
	pageDFR    = 0xE0
	pageSVR    = 0xF0
	pageISR    = 0x100
	pageTMR    = 0x180
	pageIRR    = 0x200
	pageESR    = 0x280
	pageCMCI   = 0x2F0
	pageICRLo  = 0x300
	pageICRHi  = 0x310
	pageLVT0   = 0x320 // timer, thermal, perf, LINT0, LINT1, error: 0x10 apart
	pageTMICT  = 0x380
	pageTMCCT  = 0x390
	pageTMDCR  = 0x3E0
	pageVecGap = 0x10
)

// KVMPage returns s as the register page KVM_SET_LAPIC takes, for the
// LAPIC whose x2APIC ID is id (in x2APIC mode KVM requires the whole ID
// in the ID register, with KVM_X2APIC_API_USE_32BIT_IDS, and computes the
// LDR from it). The timer:
//   - one-shot or periodic and armed: TMCCT is the time left, in counts
//     (rounded up: it never fires early), from which KVM restarts it;
//   - one-shot and fired (not armed): TMICT 0. KVM restores a one-shot
//     timer with TMICT set and TMCCT 0 as due at once
//     (set_target_expiration: "deadline <= 0 ... deadline = 0"), so its
//     interrupt, taken already, would come a second time; a zero initial
//     count arms nothing. The one guest-visible difference: TMICT reads 0
//     afterwards, as it would after the guest wrote 0.
//   - TSC-deadline: the deadline is MSR IA32_TSC_DEADLINE's, which the
//     caller writes after the page (s.Timer.TSCDeadline; KVM takes it only
//     once the LVT is in TSC-deadline mode).
//
// KVM keeps no errors apart from ESR (govmm's ESRAcc, the errors since the
// last ESR write): they are left out, as KVM would have them.
func (s Saved) KVMPage(id uint32) []byte {
	p := make([]byte, KVMPageSize)
	put := func(off int, v uint32) { binary.LittleEndian.PutUint32(p[off:], v) }
	vecs := func(off int, b vec256) {
		for i, w := range b {
			put(off+pageVecGap*i, w)
		}
	}
	if s.Mode == ModeX2APIC {
		put(pageID, id)
	} else {
		put(pageID, uint32(s.XID)<<24)
	}
	put(pageVer, apicVersion)
	put(pageTPR, s.TPR)
	put(pageLDR, s.LDR)
	put(pageDFR, s.DFR)
	put(pageSVR, s.SVR)
	vecs(pageISR, s.ISR)
	vecs(pageTMR, s.TMR)
	vecs(pageIRR, s.IRR)
	put(pageESR, s.ESR)
	put(pageCMCI, s.LVT[lvtCMCI])
	put(pageICRLo, uint32(s.ICR))
	put(pageICRHi, uint32(s.ICR>>32))
	for i := lvtTimer; i <= lvtError; i++ {
		put(pageLVT0+pageVecGap*i, s.LVT[i])
	}
	put(pageTMDCR, s.Timer.DCR)
	switch mode := s.TimerMode(); {
	case mode == TimerTSCDeadline:
	case s.Timer.Armed:
		put(pageTMICT, s.Timer.Initial)
		put(pageTMCCT, uint32(min(nsToKVMCounts(s.Timer.RemainingNS, s.Timer.DCR), uint64(s.Timer.Initial))))
	case mode == TimerPeriodic:
		put(pageTMICT, s.Timer.Initial)
	}
	return p
}

// SavedFromKVMPage is the state of the LAPIC KVM saved as page, with
// APIC_BASE base (KVM holds it in the vCPU's special registers, not the
// page). The timer's time left is TMCCT's; in TSC-deadline mode the page
// has none, and the caller sets Timer.TSCDeadline, Armed and RemainingNS
// from MSR IA32_TSC_DEADLINE and the guest's TSC. KVM's latched events
// (an NMI, SMI or SIPI) are in its vCPU events and MP state, not here.
func SavedFromKVMPage(page []byte, base uint64) (Saved, error) {
	if len(page) != KVMPageSize {
		return Saved{}, fmt.Errorf("KVM's LAPIC page is %d bytes, want %d", len(page), KVMPageSize)
	}
	reg := func(off int) uint32 { return binary.LittleEndian.Uint32(page[off:]) }
	vecs := func(off int) (b vec256) {
		for i := range b {
			b[i] = reg(off + pageVecGap*i)
		}
		return b
	}
	s := Saved{Base: base, Mode: modeOf(base), LDR: reg(pageLDR), DFR: reg(pageDFR), SVR: reg(pageSVR), TPR: reg(pageTPR),
		ISR: vecs(pageISR), TMR: vecs(pageTMR), IRR: vecs(pageIRR), ESR: reg(pageESR),
		ICR: uint64(reg(pageICRHi))<<32 | uint64(reg(pageICRLo))}
	id := reg(pageID)
	s.XID = uint8(id >> 24)
	if s.Mode == ModeX2APIC {
		s.XID = uint8(id) // the xAPIC ID a return to xAPIC by INIT would have
	}
	for i := lvtTimer; i <= lvtError; i++ {
		s.LVT[i] = reg(pageLVT0 + pageVecGap*i)
	}
	s.LVT[lvtCMCI] = reg(pageCMCI)
	s.Timer = SavedTimer{Initial: reg(pageTMICT), DCR: reg(pageTMDCR)}
	if cur := reg(pageTMCCT); s.TimerMode() != TimerTSCDeadline && s.Timer.Initial != 0 && cur != 0 {
		s.Timer.Armed = true
		s.Timer.RemainingNS = kvmCountsToNS(uint64(cur), s.Timer.DCR)
	}
	return s, s.check()
}

// TimerMode is the timer's mode, as its LVT entry selects it.
func (s Saved) TimerMode() TimerMode { return TimerMode(s.LVT[lvtTimer] >> 17 & 3) }

// nsToKVMCounts is ns of time left as whole counts of KVM's timer with
// divide configuration dcr, rounded up.
func nsToKVMCounts(ns int64, dcr uint32) uint64 {
	per := uint64(kvmBusCycleNS) * divOf(dcr)
	return (uint64(max(ns, 0)) + per - 1) / per
}

// kvmCountsToNS is c counts of KVM's timer with divide configuration dcr,
// in ns.
func kvmCountsToNS(c uint64, dcr uint32) int64 {
	ns := c * kvmBusCycleNS * divOf(dcr)
	return int64(min(ns, math.MaxInt64))
}
