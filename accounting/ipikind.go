package accounting

import "fmt"

// IPIKind classifies an IPI by how its destination was named.
type IPIKind uint8

const (
	IPIXAPICPhysical IPIKind = iota
	IPIXAPICLogical
	IPIX2APICPhysical
	IPIX2APICLogical
	IPIBroadcast
	IPISelf
	IPIAllIncludingSelf
	IPIAllExcludingSelf
	IPIParavirt // govmm's PV send-IPI (package pvipi)
	NumIPIKinds
)

var ipiNames = [...]string{"xapic_physical", "xapic_logical", "x2apic_physical", "x2apic_logical",
	"broadcast", "self", "all_including_self", "all_excluding_self", "pv"}

// DeviceMSI is no IPI kind: it tags device MSIs (PCI MSI and MSI-X) where
// IPIs carry their kind, in the latency histograms (Latencies) and in the
// charge of the exits an interrupt causes its receiver (VCPU.Charge), so
// a device's interrupts are measured as its IPIs are.
const DeviceMSI = NumIPIKinds

// numLatencyKinds are the latency histograms' kinds: the IPI kinds, then
// DeviceMSI.
const numLatencyKinds = NumIPIKinds + 1

func (k IPIKind) String() string {
	switch {
	case k < NumIPIKinds:
		return ipiNames[k]
	case k == DeviceMSI:
		return "device_msi"
	}
	return fmt.Sprintf("ipi%d", k)
}
