package acpi

import "fmt"

// PCIHost describes govmm's PCI host bridge (package pci): ECAM for bus 0
// and the windows its BARs are placed in. With Config.PCI set, Build adds
// an MCFG table and, in the DSDT,
//
//	Scope (\_SB) {
//	    Device (PCI0) {  // PCI Express root bridge, segment 0, bus 0
//	        Name (_HID, EisaId ("PNP0A08")); Name (_CID, EisaId ("PNP0A03"))
//	        Name (_SEG, 0); Name (_BBN, 0); Name (_UID, 0)
//	        Name (_CRS, ResourceTemplate () {
//	            WordBusNumber 0-0; IO 0xCF8, 8 ports;
//	            WordIO IOBase..IOBase+IOSize-1; DWordMemory MMIOBase..MMIOBase+MMIOSize-1 })
//	    }
//	    Device (RES0) {  // motherboard resources: the ECAM range
//	        Name (_HID, EisaId ("PNP0C02")); Name (_UID, 0)
//	        Name (_CRS, ResourceTemplate () { Memory32Fixed (ReadWrite, ECAMBase, 1 MiB) })
//	    }
//	}
//
// Linux builds its host bridge's windows from PCI0's _CRS (BARs outside
// them are reassigned) and accepts MMCONFIG only when RES0 (or E820)
// reserves the MCFG's range.
//
// Left out: _PRT (no INTx: govmm's functions use MSI-X), _OSC (Linux then
// keeps native PCIe services off and disables ASPM, neither of which
// govmm has), buses other than 0, a 64-bit memory window.
type PCIHost struct {
	ECAMBase           uint64 // 1 MiB aligned, below 4 GiB: bus 0's configuration space
	MMIOBase, MMIOSize uint64 // memory window, below 4 GiB
	IOBase, IOSize     uint64 // I/O port window, below 0x10000
}

func (p *PCIHost) check() error {
	switch {
	case p.ECAMBase%ecamBusSize != 0 || p.ECAMBase+ecamBusSize > 1<<32:
		return fmt.Errorf("acpi: PCI ECAM base %#x: not 1 MiB aligned below 4 GiB", p.ECAMBase)
	case p.MMIOSize == 0 || p.MMIOBase+p.MMIOSize > 1<<32 || p.MMIOBase+p.MMIOSize < p.MMIOBase:
		return fmt.Errorf("acpi: PCI memory window %#x+%#x: empty or not below 4 GiB", p.MMIOBase, p.MMIOSize)
	case p.IOSize == 0 || p.IOBase+p.IOSize > 1<<16:
		return fmt.Errorf("acpi: PCI I/O window %#x+%#x: empty or past 0xFFFF", p.IOBase, p.IOSize)
	case p.ECAMBase < p.MMIOBase+p.MMIOSize && p.MMIOBase < p.ECAMBase+ecamBusSize:
		// RES0 would claim part of PCI0's window: Linux's pnp code then
		// fails to reserve it.
		return fmt.Errorf("acpi: PCI ECAM %#x+1 MiB overlaps the memory window %#x+%#x", p.ECAMBase, p.MMIOBase, p.MMIOSize)
	case p.IOBase < 0xD00 && 0xCF8 < p.IOBase+p.IOSize:
		return fmt.Errorf("acpi: PCI I/O window %#x+%#x holds the configuration ports 0xCF8-0xCFF", p.IOBase, p.IOSize)
	case p.IOSize == 1<<16:
		// WordIO's length field is 16 bits.
		return fmt.Errorf("acpi: PCI I/O window of 64 Ki ports: it cannot also hold 0xCF8")
	}
	return nil
}

// pciObjects is the AML for Scope(\_SB) { Device(PCI0) Device(RES0) }.
func pciObjects(p *PCIHost) []byte {
	pci0 := amlDevice("PCI0",
		amlName("_HID", amlInt(eisaID("PNP0A08"))),
		amlName("_CID", amlInt(eisaID("PNP0A03"))),
		amlName("_SEG", amlInt(0)),
		amlName("_BBN", amlInt(0)),
		amlName("_UID", amlInt(0)),
		amlName("_CRS", resourceTemplate(
			resWord(addrSpaceBus, 0, 0, 1),
			resIOFixed(0xCF8, 8),
			resWord(addrSpaceIO, ioRangeEntire, p.IOBase, p.IOSize),
			resDWordMemory(p.MMIOBase, p.MMIOSize),
		)),
	)
	res0 := amlDevice("RES0",
		amlName("_HID", amlInt(eisaID("PNP0C02"))),
		amlName("_UID", amlInt(0)),
		amlName("_CRS", resourceTemplate(resMem32Fixed(uint32(p.ECAMBase), ecamBusSize))),
	)
	return amlScope("_SB_", pci0, res0)
}
