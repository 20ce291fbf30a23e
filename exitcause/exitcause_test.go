package exitcause

import (
	"strings"
	"testing"
)

// TestCauseNames: every cause has a name of its own, from fixedTable or
// its APIC register, not the fallback for a number that is no cause.
func TestCauseNames(t *testing.T) {
	seen := map[string]Cause{}
	for c := Cause(0); c < NumCauses; c++ {
		n := c.String()
		if n == "" || strings.HasPrefix(n, "cause") {
			t.Errorf("cause %d has no name (%q)", c, n)
		}
		if fixed := c >= firstFixed; fixed != (fixedTable[c].name != "") {
			t.Errorf("cause %d (%s): in fixedTable %v, want %v", c, n, !fixed, fixed)
		}
		if prev, ok := seen[n]; ok {
			t.Fatalf("causes %d and %d are both named %q", prev, c, n)
		}
		seen[n] = c
	}
	if got := APIC(true, true, 0x30).String(); got != "msr_x2apic_icr_write" {
		t.Errorf("x2APIC ICR write is %q", got)
	}
	if got := APIC(false, false, 0x30).String(); got != "mmio_apic_icr_read" {
		t.Errorf("xAPIC ICR read is %q", got)
	}
}

// TestCauseClasses: every cause has a class of its own (none falls through
// to the default) and survives its name.
func TestCauseClasses(t *testing.T) {
	for c := Cause(0); c < NumCauses; c++ {
		k, ok := c.class()
		if !ok || k >= NumClasses {
			t.Errorf("cause %d (%s) has no class", c, c)
		}
		if back, ok := Parse(c.String()); !ok || back != c {
			t.Errorf("Parse(%q) = %d, %v; want %d", c.String(), back, ok, c)
		}
	}
	for k := Class(0); k < NumClasses; k++ {
		if strings.HasPrefix(k.String(), "class") {
			t.Errorf("class %d has no name", k)
		}
	}
	if _, ok := Parse("no_such_cause"); ok {
		t.Error("an unknown cause name parses")
	}
	if NumCauses.Class() != ClassOther {
		t.Error("a number past the causes is not ClassOther")
	}
}

// TestCauseClassTable pins the classes the report, dashboard and benchmarks
// rely on. The timer's initial-count register (TMICT, named timer_icr) is
// the case a name-based rule ("_icr" in the name: an IPI send) got wrong.
func TestCauseClassTable(t *testing.T) {
	x2w := func(reg uint16) Cause { return APIC(true, true, reg) }
	x2r := func(reg uint16) Cause { return APIC(true, false, reg) }
	xw := func(reg uint16) Cause { return APIC(false, true, reg) }
	xr := func(reg uint16) Cause { return APIC(false, false, reg) }
	for _, tc := range []struct {
		name string
		c    Cause
		want Class
	}{
		{"msr_x2apic_icr_write", x2w(0x30), ClassICR},
		{"msr_x2apic_icr_read", x2r(0x30), ClassICR},
		{"mmio_apic_icr_write", xw(0x30), ClassICR},
		{"mmio_apic_icr_read", xr(0x30), ClassICR}, // the xAPIC idle read before a send
		{"mmio_apic_icr2_write", xw(0x31), ClassICR},
		{"msr_x2apic_self_ipi_write", x2w(0x3F), ClassSelfIPI},
		{"msr_pv_send_ipi", MSRPVIPI, ClassPVIPI},
		{"msr_x2apic_eoi_write", x2w(0x0B), ClassEOI},
		{"mmio_apic_eoi_write", xw(0x0B), ClassEOI},
		{"msr_x2apic_timer_icr_write", x2w(0x38), ClassAPICOther},
		{"mmio_apic_timer_icr_write", xw(0x38), ClassAPICOther},
		{"msr_x2apic_timer_icr_read", x2r(0x38), ClassAPICOther},
		{"mmio_apic_timer_ccr_read", xr(0x39), ClassAPICOther},
		{"msr_x2apic_lvt_timer_write", x2w(0x32), ClassAPICOther},
		{"msr_x2apic_tpr_write", x2w(0x08), ClassAPICOther},
		{"msr_x2apic_isr1_read", x2r(0x11), ClassAPICOther},
		{"msr_tsc_deadline_write", MSRTSCDeadlineWrite, ClassAPICOther},
		{"msr_apic_base_write", MSRAPICBaseWrite, ClassAPICOther},
		{"msr_pv_eoi_write", MSRPVEOIWrite, ClassAPICOther},
		{"set_tpr", SetTPR, ClassAPICOther},
		{"mmio_ioapic_eoi_write", MMIOIOAPICEOIWrite, ClassIOAPIC},
		{"mmio_ioapic_iowin_write", MMIOIOAPICWinWrite, ClassIOAPIC},
		{"mmio_iommu_write", MMIOIOMMUWrite, ClassIOMMU},
		{"pio_serial", PIOSerial, ClassPIO},
		{"pio_other", PIOOther, ClassPIO},
		{"hlt", HLT, ClassHLT},
		{"irq_window", IRQWindow, ClassIRQWindow},
		{"kick", Kick, ClassKick},
		{"kick_spurious", KickSpurious, ClassKickSpurious},
		{"recover_int3", RecoverInt3, ClassRecover},
		{"recover_xsave", RecoverXSAVE, ClassRecover},
		{"recover_xstate_fault", RecoverXStateFault, ClassRecover},
		{"syscall_doorbell", SyscallDoorbell, ClassDoorbell},
		{"msr_syscall_entry_write", MSRSyscallEntryWrite, ClassDoorbell},
		{"msr_other_write", MSROtherWrite, ClassOther},
		{"mmio_other", MMIOOther, ClassOther},
		{"shutdown", Shutdown, ClassOther},
	} {
		if tc.c.String() != tc.name {
			t.Errorf("cause %d is %q, want %q", tc.c, tc.c, tc.name)
		}
		if got := tc.c.Class(); got != tc.want {
			t.Errorf("%s: class %s, want %s", tc.name, got, tc.want)
		}
		if back, ok := Parse(tc.name); !ok || back.Class() != tc.want {
			t.Errorf("Parse(%q) = %s, %v: not class %s", tc.name, back, ok, tc.want)
		}
	}
	for _, c := range []Cause{x2w(0x30), xw(0x30), xr(0x30), xw(0x31), x2w(0x3F), MSRPVIPI} {
		if !c.Class().IPISend() {
			t.Errorf("%s is not an IPI send", c)
		}
	}
	for _, c := range []Cause{x2w(0x38), xw(0x38), x2w(0x0B), MSRTSCDeadlineWrite, MSRPVEOIWrite, HLT} {
		if c.Class().IPISend() {
			t.Errorf("%s is an IPI send", c)
		}
	}
}
