package devices

// PMTimer is the ACPI power-management timer (ACPI 6.x §4.8.3.3): a free
// running counter at 3.579545 MHz read from one 32-bit port (the FADT's
// PM_TMR_BLK, with TMR_VAL_EXT: 32 bits wide). It is read-only; writes are
// ignored. Left out: the TMR_STS overflow status and its SCI.
//
// Why govmm has one: a Linux guest whose LAPIC timer is not TSC-deadline
// (govmm hides TSC-deadline mode on hosts whose KVM drops its writes)
// calibrates the LAPIC timer at boot, and without a PIT or HPET only the PM
// timer lets it accept the result (calibrate_by_pmtimer in
// arch/x86/kernel/apic/apic.c; otherwise "APIC timer disabled due to
// verification failure" and the guest has no timer at all).
type PMTimer struct {
	Now func() int64 // monotonic nanoseconds
}

// PMTimerHz is the PM timer's frequency.
const PMTimerHz = 3579545

func (p *PMTimer) In(cpu int, port uint16, data []byte) {
	ns := p.Now()
	ticks := uint64(ns/1e9)*PMTimerHz + uint64(ns%1e9)*PMTimerHz/1e9
	putLE(data, ticks)
}

func (p *PMTimer) Out(cpu int, port uint16, data []byte) {}
