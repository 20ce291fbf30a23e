package acpi

// MCFG, the PCI Express memory-mapped configuration space base address
// description table (PCI Firmware Specification 3.2 §4.1.2), revision 1:
// one allocation for segment 0, buses 0-0 (the one bus govmm has), 1 MiB
// of ECAM at PCIHost.ECAMBase.
//
// Linux (arch/x86/pci/mmconfig-shared.c) uses it only if the region is
// reserved in the E820 map or by a motherboard-resources device's _CRS:
// the DSDT's \_SB.RES0 (dsdt.go) reserves it.

const (
	mcfgReserved   = 8  // after the header
	mcfgAllocation = 16 // one configuration space base address allocation
	ecamBusSize    = 1 << 20
)

func mcfg(p *PCIHost, oemID string) []byte {
	t := header("MCFG", 1, oemID)
	t = append(t, make([]byte, mcfgReserved)...)
	t = le.AppendUint64(t, p.ECAMBase)
	t = le.AppendUint16(t, 0) // PCI segment group
	t = append(t, 0, 0)       // start and end bus
	t = le.AppendUint32(t, 0) // reserved
	return finish(t)
}
