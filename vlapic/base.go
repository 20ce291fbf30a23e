// This file implements the IA32_APIC_BASE MSR (SDM 11.4.4, 11.12.5): page
// relocation and the disabled / xAPIC / x2APIC mode transitions.

package vlapic

// baseReserved are APIC_BASE bits that #GP when set whatever the CPU: 7:0,
// 9, and those above the largest MAXPHYADDR (52); the bits above the
// guest's own MAXPHYADDR (Options.PhysAddrBits) are reserved too
// (reservedBase).
const baseReserved = 0x2FF | 0xFFF0_0000_0000_0000

// reservedBase is every APIC_BASE bit a write must leave clear.
func (b *Bus) reservedBase() uint64 {
	r := uint64(baseReserved)
	if bits := b.physAddrBits; bits > 0 && bits < 52 {
		r |= ^uint64(0) << bits
	}
	if !b.x2apic {
		r |= BaseEXTD
	}
	return r
}

// Base returns the APIC_BASE MSR.
func (a *LAPIC) Base() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.base
}

// PageBase returns the physical address of the xAPIC page; ok is false
// unless the LAPIC is in xAPIC mode (the page is not there otherwise). It
// takes no lock (an atomic mirror, publishPageLocked): the vCPU asks at
// every MMIO exit, and only its own APIC_BASE writes move the page.
func (a *LAPIC) PageBase() (addr uint64, ok bool) {
	p := a.page.Load()
	return p &^ 1, p&1 != 0
}

// publishPageLocked mirrors the xAPIC page's place into page (under mu,
// whenever base or mode changes).
func (a *LAPIC) publishPageLocked() {
	var p uint64
	if a.mode == ModeXAPIC {
		p = a.base&^0xFFF&^baseReserved | 1
	}
	a.page.Store(p)
}

func modeOfBase(v uint64) (Mode, bool) {
	switch v & (BaseEN | BaseEXTD) {
	case 0:
		return ModeDisabled, true
	case BaseEN:
		return ModeXAPIC, true
	case BaseEN | BaseEXTD:
		return ModeX2APIC, true
	}
	return 0, false // EXTD without EN
}

// SetBase writes the APIC_BASE MSR. It returns ErrGP for reserved bits, EXTD
// when x2APIC is not offered, EXTD without EN, x2APIC -> xAPIC and
// disabled -> x2APIC (both must go through the other state, SDM figure
// 11-27). Disabling resets the LAPIC to its power-on state (the SDM allows
// the state to be lost; govmm makes it so, so re-enabling is predictable);
// enabling xAPIC sets the xAPIC ID back to the CPU index, as KVM does.
// Entering x2APIC keeps every register; the ID becomes the x2APIC ID (the
// CPU index) and the LDR is derived from it.
func (a *LAPIC) SetBase(v uint64) error {
	mode, ok := modeOfBase(v)
	if v&a.bus.reservedBase() != 0 || !ok {
		return ErrGP
	}
	a.mu.Lock()
	old := a.mode
	if old == ModeX2APIC && mode == ModeXAPIC || old == ModeDisabled && mode == ModeX2APIC {
		a.mu.Unlock()
		return ErrGP
	}
	a.base = v
	a.publishPageLocked() // again below if the mode changes too
	rebuild := false
	if mode != old {
		a.foldLocked() // posted vectors are accepted or dropped by the old mode
		a.mode = mode
		switch mode {
		case ModeDisabled:
			a.xid = uint8(a.cpu)
			a.resetLocked()
		case ModeXAPIC:
			a.xid = uint8(a.cpu)
		case ModeX2APIC:
			a.ldr = x2LDR(uint32(a.cpu))
		}
		rebuild = a.publishLocked()
	}
	a.mu.Unlock()
	if rebuild {
		a.bus.rebuild()
	}
	return nil
}
