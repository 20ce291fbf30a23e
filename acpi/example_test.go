package acpi_test

import (
	"fmt"

	"github.com/govmm/govmm/acpi"
)

func ExampleBuild() {
	cfg := acpi.Config{
		CPUs:      4,
		LAPICAddr: 0xFEE00000,
		IOAPICs:   []acpi.IOAPIC{{ID: 0, Addr: 0xFEC00000, SourceID: 0x00F0}},
		Overrides: acpi.ISAOverrides(9),
		PM:        acpi.PM{PM1aEvt: 0x600, PM1aCnt: 0x604, SCI: 9, ResetPort: 0xCF9, ResetValue: 0x6},
		DMAR:      &acpi.DMAR{RegBase: 0xFED90000, IntrRemap: true, HostAddrWidth: 39},
		OEMID:     "GOVMM ",
	}
	rsdp, tables, err := acpi.Build(cfg, 0xE0000, 0xE0040)
	if err != nil {
		panic(err)
	}
	// Copy rsdp to guest 0xE0000 and tables to 0xE0040.
	fmt.Println(len(rsdp), len(tables), fmt.Sprintf("%#x", acpi.PoweroffValue))
	// Output: 36 704 0x3400
}
