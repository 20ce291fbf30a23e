package vmm

import (
	"fmt"

	"github.com/govmm/govmm/acpi"
	"github.com/govmm/govmm/devices"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/routing"
	"github.com/govmm/govmm/vintremap"
	"github.com/govmm/govmm/vioapic"
)

// Where the ACPI tables go: the RSDP in the BIOS area Linux scans
// (0xE0000-0xFFFFF, reserved in the E820 map), the tables right after it.
const (
	rsdpAddr   = 0xE0000
	tablesAddr = 0xE0040
	tablesEnd  = 0x100000

	portPM1aEvt = 0x600
	portPM1aCnt = 0x604
	portReset   = 0xCF9
	portPMTimer = 0x608
	resetValue  = 0x6
	sciIRQ      = 9
)

// installACPI writes the ACPI tables that describe this VM (MADT with its
// CPUs and IOAPIC, FADT with govmm's PM registers, DSDT with \_S5, and the
// DMAR of the remapping unit when there is one) and registers the PM
// device they announce.
func (vm *VM) installACPI() error {
	cfg := acpi.Config{
		CPUs:      vm.cfg.CPUs,
		IOAPICs:   []acpi.IOAPIC{{ID: 0, Addr: vioapic.Base, GSIBase: 0, SourceID: routing.IOAPICSourceID}},
		Overrides: acpi.ISAOverrides(sciIRQ),
		PM:        acpi.PM{PM1aEvt: portPM1aEvt, PM1aCnt: portPM1aCnt, SCI: sciIRQ, ResetPort: portReset, ResetValue: resetValue, PMTimer: portPMTimer},
	}
	if vm.cfg.wantsPCI() {
		cfg.PCI = pciACPIHost()
	}
	if vm.cfg.IOMMU {
		cfg.DMAR = &acpi.DMAR{RegBase: vintremap.Base, IntrRemap: true, HostAddrWidth: 39}
	}
	rsdp, tables, err := acpi.Build(cfg, rsdpAddr, tablesAddr)
	if err != nil {
		return err
	}
	if tablesAddr+len(tables) > tablesEnd {
		return fmt.Errorf("ACPI tables for %d CPUs (%d bytes) do not fit below 1 MiB", vm.cfg.CPUs, len(tables))
	}
	if err := vm.mem.Write(rsdpAddr, rsdp); err != nil {
		return err
	}
	if err := vm.mem.Write(tablesAddr, tables); err != nil {
		return err
	}
	pm := &devices.ACPIPM{EvtPort: portPM1aEvt, CntPort: portPM1aCnt, ResetPort: portReset, ResetValue: resetValue,
		PowerOff: func() { vm.end("poweroff", 0) }, Reset: func() { vm.end("reboot", 0) }}
	ports := []portDevice{
		{portPM1aEvt, 6, "ACPI PM1a event/control", exitcause.PIOACPIPM, pm},
		{portPMTimer, 4, "ACPI PM timer", exitcause.PIOACPIPM, &devices.PMTimer{Now: vm.clock.Now}},
	}
	if !vm.cfg.wantsPCI() {
		// With a PCI bus, 0xCF9 is inside the bus's 0xCF8-0xCFF and the
		// bus hands its accesses to pm (setupPCI).
		ports = append(ports, portDevice{portReset, 1, "ACPI reset", exitcause.PIOACPIPM, pm})
	}
	if err := vm.registerPorts(ports); err != nil {
		return err
	}
	vm.pm = pm
	return nil
}
