// This file implements the MSR interface (SDM 11.12.1): the x2APIC registers
// at 0x800-0x8FF with their #GP rules, plus APIC_BASE (0x1B) and
// IA32_TSC_DEADLINE (0x6E0) so the VMM can route all LAPIC MSRs here.

package vlapic

// ReadMSR reads an x2APIC register, APIC_BASE or TSC_DEADLINE. x2APIC
// registers #GP outside x2APIC mode, when absent, and when write-only (EOI,
// SELF_IPI).
func (a *LAPIC) ReadMSR(msr uint32) (uint64, error) {
	switch {
	case msr == MSRAPICBase:
		return a.Base(), nil
	case msr == MSRTSCDeadline:
		return a.readTSCDeadline(), nil
	case msr < MSRX2APICFirst || msr > MSRX2APICLast:
		return 0, ErrGP
	}
	r := RegisterOfMSR(msr)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mode != ModeX2APIC {
		return 0, ErrGP
	}
	if r == RegICR {
		return a.icr, nil
	}
	v, ok := a.readLocked(r, true)
	if !ok {
		return 0, ErrGP
	}
	return uint64(v), nil
}

// WriteMSR writes an x2APIC register, APIC_BASE (as SetBase) or
// TSC_DEADLINE. x2APIC registers #GP outside x2APIC mode, when absent or
// read-only, and when a reserved bit is set (SDM 11.12.1.3), which includes
// bits 63:32 of all but the ICR and any non-zero EOI or ESR write.
func (a *LAPIC) WriteMSR(msr uint32, v uint64) (Effect, error) {
	switch {
	case msr == MSRAPICBase:
		return Effect{}, a.SetBase(v)
	case msr == MSRTSCDeadline:
		// The bus clock's TSC: right where the guest TSC is the host's
		// plus a fixed offset (tests). govmm's vCPUs read KVM's and call
		// WriteTSCDeadline (routing/lapic.go).
		a.WriteTSCDeadline(v, a.bus.clock.TSC())
		return Effect{}, nil
	case msr < MSRX2APICFirst || msr > MSRX2APICLast:
		return Effect{}, ErrGP
	}
	var eff Effect
	err := a.WriteX2APIC(RegisterOfMSR(msr), v, &eff)
	return eff, err
}

// WriteX2APIC writes x2APIC register r (its MSR less 0x800) with the
// #GP rules of WriteMSR, its Effect filled in *eff: the x2APIC registers
// alone, as a vCPU's exit reaches them (vcpu's x2apic), after WriteMSR's
// tests for the two other MSRs it takes.
func (a *LAPIC) WriteX2APIC(r Register, v uint64, eff *Effect) error {
	*eff = Effect{Register: r}
	var p post
	a.mu.Lock()
	if a.mode != ModeX2APIC {
		a.mu.Unlock()
		return ErrGP
	}
	switch r {
	case RegICR:
		if v&x2ICRReserved != 0 {
			a.mu.Unlock()
			return ErrGP
		}
		a.icr = v &^ icrBusy
		a.sendLocked(a.icr, true, &p)
	case RegSelfIPI:
		if v&^0xFF != 0 {
			a.mu.Unlock()
			return ErrGP
		}
		a.sendLocked(v|uint64(Self)<<18, true, &p)
	default:
		mask, ok := x2Writable(r)
		if !ok || v&^uint64(mask) != 0 {
			a.mu.Unlock()
			return ErrGP
		}
		a.writeLocked(r, uint32(v), true, &p)
		eff.Settled = r == RegEOI && a.settledLocked()
	}
	a.mu.Unlock()
	if p.rebuild || p.eoi || p.notify || p.send { // finish's work, in the caller: most writes post nothing
		a.finish(&p, eff)
	}
	return nil
}

// settledLocked says whether the LAPIC has nothing for its CPU to act on:
// no vector requested (the AVIC page folded first), no event latched, the
// timer stopped (Effect.Settled).
func (a *LAPIC) settledLocked() bool {
	a.foldLocked()
	_, requested := a.irr.highest()
	return !requested && a.ev.None() && !a.t.armed
}
