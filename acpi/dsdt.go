package acpi

// DSDT, the Differentiated System Description Table (ACPI 6.x §5.2.11.1),
// revision 2 (64-bit AML integers). It holds only
//
//	Name (\_S5, Package (4) { 5, 5, 0, 0 })
//
// which is what Linux needs to offer ACPI poweroff (acpi_sleep_init checks
// that \_S5 exists). To power off, Linux writes PM1a_CNT twice: first
// SLP_TYP<<10 (SlpTypS5<<10 = 0x1400), then the same with SLP_EN (bit 13)
// set: PoweroffValue = 0x3400, plus whatever bits it read back (SCI_EN, bit
// 0). govmm's PM device should power off when a 16-bit write to PM1a_CNT has
// SLP_EN set and bits 12:10 equal SlpTypS5.
//
// and, when Config.PCI is set, the PCI host bridge \_SB.PCI0 and the
// motherboard-resources device \_SB.RES0 reserving ECAM (pcihost.go).
//
// Left out: processor objects (Linux brings CPUs up from the MADT alone),
// other \_SB devices (no _PRT, no COM1/PNP0501 object), other sleep states,
// _PTS/_WAK.

// SLP_TYP value for S5 in \_S5, and the PM1a_CNT value that means "power off".
const (
	SlpTypS5      = 5
	SlpEn         = 1 << 13
	PoweroffValue = SlpTypS5<<10 | SlpEn // 0x3400
)

func dsdt(oemID string, pci *PCIHost) []byte {
	t := header("DSDT", 2, oemID)
	t = append(t, amlName("_S5_", amlPackage(
		amlInt(SlpTypS5),     // PM1a_CNT.SLP_TYP
		amlInt(SlpTypS5),     // PM1b_CNT.SLP_TYP (no PM1b block)
		amlInt(0), amlInt(0), // reserved
	))...)
	if pci != nil {
		t = append(t, pciObjects(pci)...)
	}
	return finish(t)
}
