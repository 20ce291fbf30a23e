package dashboard

import "github.com/govmm/govmm/accounting"

// A cause class groups exit causes the way a person reads them: the ICR
// (sending IPIs), the LAPIC EOI (finishing an interrupt), the rest of the
// APIC, port I/O, the IOAPIC and IOMMU, HLT, interrupt windows, kicks,
// emulator-gap recoveries and everything else. The history and the chart
// are per class because 280-odd causes do not fit on a chart. They are
// groups of accounting.Class, which classifies each cause.
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

// ofAccounting is the dashboard class of each accounting class. The PV
// send-IPI, spurious kicks and the SYSCALL doorbell are "other".
var ofAccounting = [accounting.NumClasses]class{
	accounting.ClassICR:          classICR,
	accounting.ClassSelfIPI:      classICR,
	accounting.ClassPVIPI:        classOther,
	accounting.ClassEOI:          classEOI,
	accounting.ClassAPICOther:    classAPICOther,
	accounting.ClassPIO:          classPIO,
	accounting.ClassIOAPIC:       classIOAPIC,
	accounting.ClassIOMMU:        classIOMMU,
	accounting.ClassHLT:          classHLT,
	accounting.ClassIRQWindow:    classIRQWindow,
	accounting.ClassKick:         classKick,
	accounting.ClassKickSpurious: classOther,
	accounting.ClassRecover:      classRecover,
	accounting.ClassDoorbell:     classOther,
	accounting.ClassOther:        classOther,
}

// classOf classifies a cause by its accounting name (accounting.Cause's
// String); a name that is no cause is "other".
func classOf(cause string) class { return ofAccounting[accounting.ClassOf(cause)] }

// byClass sums a by-cause map into classes.
func byClass(byCause map[string]uint64) [numClasses]uint64 {
	var out [numClasses]uint64
	for c, n := range byCause {
		out[classOf(c)] += n
	}
	return out
}
