package vcpu

import (
	"sync/atomic"
	"unsafe"
)

// PV EOI with KVM's guest ABI, entirely in govmm: CPUID 0x40000001 bit 6,
// MSR 0x4B564D04 = guest-physical address (4-byte aligned) | 1. When govmm
// injects an edge vector with nothing else requested, it sets bit 0 of the
// guest's word; the guest's EOI then only clears that bit, without an exit,
// and govmm completes the EOI in the LAPIC at its next look (each entry, or
// a halt). Stock Linux uses it unmodified (arch/x86/kernel/kvm.c).

// MSRPVEOI is KVM's MSR_KVM_PV_EOI_EN.
const MSRPVEOI = 0x4B564D04

// pvEOIWord returns the guest's PV EOI word, or nil when PV EOI is off.
func (v *VCPU) pvEOIWord() *uint32 {
	if v.pvEOIAddr == 0 || v.mem == nil {
		return nil
	}
	b, err := v.mem.Slice(v.pvEOIAddr, 4)
	if err != nil {
		return nil
	}
	// The guest writes this word concurrently: atomics only. The address is
	// 4-byte aligned in a page-aligned mapping.
	return (*uint32)(unsafe.Pointer(&b[0]))
}

// writePVEOI handles a WRMSR of MSR_KVM_PV_EOI_EN; false means #GP.
func (v *VCPU) writePVEOI(val uint64) bool {
	if !v.pvEOI {
		return false
	}
	addr := val &^ 1
	if val&1 == 0 {
		v.completePVEOI()
		v.pvEOIAddr, v.pvEOIMSR = 0, val
		return true
	}
	if addr&3 != 0 || addr == 0 {
		return false
	}
	if _, err := v.mem.Slice(addr, 4); err != nil {
		return false
	}
	v.completePVEOI()
	v.pvEOIAddr, v.pvEOIMSR = addr, val
	return true
}

// syncPVEOI completes a PV EOI the guest has done (cleared its bit).
func (v *VCPU) syncPVEOI() {
	if !v.pvEOIPending {
		return
	}
	w := v.pvEOIWord()
	if w == nil || atomic.LoadUint32(w)&1 == 0 {
		v.pvEOIPending = false
		v.lapic.EOI()
		v.acct.PVEOIs.Add(1)
	}
}

// completePVEOI takes the PV EOI back before something else is injected:
// if the guest already cleared its bit the EOI is done now, otherwise the
// bit is cleared and the guest's EOI will be a real one.
func (v *VCPU) completePVEOI() {
	if !v.pvEOIPending {
		return
	}
	v.pvEOIPending = false
	w := v.pvEOIWord()
	if w == nil || atomic.AndUint32(w, ^uint32(1))&1 == 0 {
		v.lapic.EOI()
		v.acct.PVEOIs.Add(1)
	}
}

// retractPVEOI clears the guest's bit for a vector whose injection was
// withdrawn: it was never in service in the guest.
func (v *VCPU) retractPVEOI() {
	if !v.pvEOIPending {
		return
	}
	v.pvEOIPending = false
	if w := v.pvEOIWord(); w != nil {
		atomic.AndUint32(w, ^uint32(1))
	}
}

// offerPVEOI sets the guest's bit for the vector just injected.
func (v *VCPU) offerPVEOI() {
	if w := v.pvEOIWord(); w != nil {
		atomic.OrUint32(w, 1)
		v.pvEOIPending = true
	}
}
