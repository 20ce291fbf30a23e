package exitcause

import (
	"fmt"

	"github.com/govmm/govmm/vlapic"
)

// Class groups exit causes the way a person reads them: sending IPIs,
// finishing interrupts, the rest of the LAPIC, devices, halts, kicks,
// recoveries. Every consumer that groups causes (the report's per-vCPU
// table, the dashboard, the benchmarks' exits per IPI) maps Class values,
// so a cause is classified once, by its number: the APIC register causes
// by their register index (apicClass), the others in fixedTable.
type Class uint8

const (
	// ClassICR: the LAPIC interrupt command register, ICR and ICR2 (APIC
	// registers 0x30, 0x31), read or written: three per ICR write in xAPIC
	// mode (the ICR idle read, the ICR2 write, the ICR write), one in
	// x2APIC mode (the ICR WRMSR; x2APIC has no ICR2). What an IPI costs in
	// each destination mode is package ipicost.
	ClassICR Class = iota
	// ClassSelfIPI: the x2APIC SELF_IPI register (0x3F).
	ClassSelfIPI
	// ClassPVIPI: govmm's paravirtual send-IPI MSR (package pvipi).
	ClassPVIPI
	// ClassEOI: the LAPIC EOI register (0x0B). Not the IOAPIC's EOI
	// register (ClassIOAPIC) nor the PV EOI MSR (ClassAPICOther).
	ClassEOI
	// ClassAPICOther: every other LAPIC register (the timer's, timer_icr
	// included, TPR, LVTs, ISR/IRR, ...), IA32_APIC_BASE, IA32_TSC_DEADLINE,
	// the PV EOI MSR and KVM's TPR-below-threshold exit.
	ClassAPICOther
	ClassPIO
	ClassIOAPIC
	ClassIOMMU
	// ClassPCI: PCI configuration space, MSI-X tables and other BAR
	// registers that are not virtio's.
	ClassPCI
	// ClassVirtio: virtio transport registers, notifies that exited.
	ClassVirtio
	ClassHLT
	ClassIRQWindow
	// ClassKick: KVM_RUN interrupted by a kick that brought work.
	ClassKick
	// ClassKickSpurious: by a kick that found nothing new.
	ClassKickSpurious
	// ClassRecover: instructions govmm completed after KVM's emulator
	// failed (INT3, the XSAVE family, the rest).
	ClassRecover
	// ClassDoorbell: the SYSCALL doorbell (package pvsyscall): its page
	// and its entry MSR.
	ClassDoorbell
	// ClassOther: other MSRs and MMIO, shutdown, unclassified exits.
	ClassOther
	NumClasses
)

var classNames = [NumClasses]string{"icr", "self_ipi", "pv_send_ipi", "eoi", "apic_other", "pio",
	"ioapic", "iommu", "pci", "virtio", "hlt", "irq_window", "kick", "kick_spurious", "recover", "doorbell", "other"}

func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return fmt.Sprintf("class%d", c)
}

// IPISend is true for the classes of the sender's side of an IPI: the
// ICR (and ICR2), SELF_IPI and the PV send-IPI MSR.
func (c Class) IPISend() bool {
	return c == ClassICR || c == ClassSelfIPI || c == ClassPVIPI
}

// Class returns the cause's class; ClassOther for a number that is no
// cause.
func (c Cause) Class() Class {
	if k, ok := c.class(); ok {
		return k
	}
	return ClassOther
}

// class classifies c; false for a number that is no cause or a cause
// fixedTable leaves out (TestCauseClasses catches those).
func (c Cause) class() (Class, bool) {
	switch {
	case c < firstFixed:
		return apicClass(int((c - MMIOAPICRead) % apicRegs)), true
	case c < NumCauses && fixedTable[c].name != "":
		return fixedTable[c].class, true
	}
	return 0, false
}

// apicClass classifies an APIC register access by the register's index.
func apicClass(reg int) Class {
	switch vlapic.Register(reg) {
	case vlapic.RegICR, vlapic.RegICR2:
		return ClassICR
	case vlapic.RegSelfIPI:
		return ClassSelfIPI
	case vlapic.RegEOI:
		return ClassEOI
	}
	return ClassAPICOther
}

var causeByName = func() map[string]Cause {
	m := make(map[string]Cause, NumCauses)
	for c := range NumCauses {
		m[c.String()] = c
	}
	return m
}()

// Parse returns the cause a report names (Cause.String's inverse).
func Parse(name string) (Cause, bool) {
	c, ok := causeByName[name]
	return c, ok
}
