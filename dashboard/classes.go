package dashboard

import (
	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
)

// A cause class groups exit causes the way a person reads them: the ICR
// (sending IPIs), govmm's PV send-IPI, the LAPIC EOI (finishing an interrupt), the rest of the
// APIC, port I/O, the IOAPIC and IOMMU, HLT, interrupt windows, kicks,
// emulator-gap recoveries and everything else. The history and the chart
// are per class because 280-odd causes do not fit on a chart. They are
// groups of exitcause.Class, which classifies each cause.
type class uint8

const (
	classICR class = iota
	classPVIPI
	classEOI
	classAPICOther
	classPIO
	classIOAPIC
	classIOMMU
	classPCI
	classVirtio
	classHLT
	classIRQWindow
	classKick
	classRecover
	classOther
	numClasses
)

var classNames = [numClasses]string{classICR: "icr", classPVIPI: "pv_send_ipi", classEOI: "eoi",
	classAPICOther: "apic_other", classPIO: "pio", classIOAPIC: "ioapic", classIOMMU: "iommu", classPCI: "pci", classVirtio: "virtio", classHLT: "hlt",
	classIRQWindow: "irq_window", classKick: "kick", classRecover: "recover", classOther: "other"}

func (c class) String() string { return classNames[c] }

// ofAccounting is the dashboard class of each accounting class. Spurious
// kicks and the SYSCALL doorbell are "other". (The PV send-IPI was too,
// until it had a class here: a grouping of its own in each consumer is how
// msr_pv_send_ipi came to show as "other" though accounting classed it.)
var ofAccounting = [exitcause.NumClasses]class{
	exitcause.ClassICR:          classICR,
	exitcause.ClassSelfIPI:      classICR,
	exitcause.ClassPVIPI:        classPVIPI,
	exitcause.ClassEOI:          classEOI,
	exitcause.ClassAPICOther:    classAPICOther,
	exitcause.ClassPIO:          classPIO,
	exitcause.ClassIOAPIC:       classIOAPIC,
	exitcause.ClassIOMMU:        classIOMMU,
	exitcause.ClassPCI:          classPCI,
	exitcause.ClassVirtio:       classVirtio,
	exitcause.ClassHLT:          classHLT,
	exitcause.ClassIRQWindow:    classIRQWindow,
	exitcause.ClassKick:         classKick,
	exitcause.ClassKickSpurious: classOther,
	exitcause.ClassRecover:      classRecover,
	exitcause.ClassDoorbell:     classOther,
	exitcause.ClassOther:        classOther,
}

// classOf classifies a cause by its accounting name (exitcause.Cause's
// String); a name that is no cause is "other".
func classOf(cause string) class { return ofAccounting[accounting.ClassOf(cause)] }

// ipiSend are the classes of the sender's exits of an IPI: ICR and
// SELF_IPI accesses, and the PV send-IPI (exitcause.Class.IPISend).
var ipiSend = []class{classICR, classPVIPI}

// byClass sums a by-cause map into classes.
func byClass(byCause map[string]uint64) [numClasses]uint64 {
	var out [numClasses]uint64
	for c, n := range byCause {
		out[classOf(c)] += n
	}
	return out
}
