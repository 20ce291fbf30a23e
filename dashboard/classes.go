package dashboard

import "strings"

// A cause class groups exit causes the way a person reads them: the ICR
// (sending IPIs), the LAPIC EOI (finishing an interrupt), the rest of the
// APIC, port I/O, the IOAPIC and IOMMU, HLT, interrupt windows, kicks,
// emulator-gap recoveries and everything else. The history and the chart
// are per class because 280-odd causes do not fit on a chart.
type class uint8

const (
	classICR class = iota
	classEOI
	classAPICOther
	classPIO
	classIOAPIC
	classIOMMU
	classHLT
	classIRQWindow
	classKick
	classRecover
	classOther
	numClasses
)

var classNames = [numClasses]string{"icr", "eoi", "apic_other", "pio", "ioapic", "iommu", "hlt",
	"irq_window", "kick", "recover", "other"}

func (c class) String() string { return classNames[c] }

// classOf classifies a cause by its accounting name (accounting.Cause's
// String). Names, not numbers, so that new causes land somewhere sensible.
func classOf(cause string) class {
	lapic := strings.HasPrefix(cause, "mmio_apic_") || strings.HasPrefix(cause, "msr_x2apic_")
	switch {
	case lapic && (strings.Contains(cause, "_icr") || strings.Contains(cause, "_self_ipi_")):
		return classICR
	case lapic && strings.Contains(cause, "_eoi_"):
		return classEOI
	case lapic || strings.HasPrefix(cause, "msr_apic_base") || strings.HasPrefix(cause, "msr_tsc_deadline"):
		return classAPICOther
	case strings.HasPrefix(cause, "pio_"):
		return classPIO
	case strings.HasPrefix(cause, "mmio_ioapic_"):
		return classIOAPIC
	case strings.HasPrefix(cause, "mmio_iommu_"):
		return classIOMMU
	case cause == "hlt":
		return classHLT
	case cause == "irq_window":
		return classIRQWindow
	case cause == "kick":
		return classKick
	case strings.HasPrefix(cause, "recover_"):
		return classRecover
	}
	return classOther
}

// byClass sums a by-cause map into classes.
func byClass(byCause map[string]uint64) [numClasses]uint64 {
	var out [numClasses]uint64
	for c, n := range byCause {
		out[classOf(c)] += n
	}
	return out
}
