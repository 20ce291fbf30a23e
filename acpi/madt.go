package acpi

import "fmt"

// MADT, the Multiple APIC Description Table, signature "APIC" (ACPI 6.x
// §5.2.12), revision 4 (ACPI 6.0-6.2 layout; revision 5 would make Linux
// consult the "online capable" bit, which is irrelevant when every CPU is
// enabled).
//
// Entries, in this order (Linux registers CPUs in table order, so the BSP,
// APIC ID 0, comes first):
//   - a Processor Local APIC (type 0) for APIC IDs 0..254, UID = index;
//   - a Processor Local x2APIC (type 9) for APIC IDs 255 and up, as Linux and
//     QEMU expect (255 is the xAPIC broadcast ID and cannot be a CPU);
//   - one I/O APIC (type 1) per Config.IOAPICs;
//   - one Interrupt Source Override (type 2) per Config.Overrides, bus 0;
//   - a Local APIC NMI (type 4) on LINT1 for all processors (UID 0xFF) and,
//     when there are x2APIC entries, a Local x2APIC NMI (type 10) on LINT1
//     for all (UID 0xFFFFFFFF), as QEMU does.
//
// Left out: Local APIC Address Override, NMI sources, platform interrupt
// sources, disabled (hot-pluggable) CPUs.

const (
	madtLocalAPIC      = 0
	madtIOAPIC         = 1
	madtOverride       = 2
	madtLocalAPICNMI   = 4
	madtLocalX2APIC    = 9
	madtLocalX2APICNMI = 10

	madtPCATCompat = 1 // flags: dual 8259s present (Linux masks them)
	lapicEnabled   = 1 // Local APIC / x2APIC flags: enabled

	maxXAPICID = 254 // IDs above go in x2APIC entries
)

// MPS INTI flags of an Interrupt Source Override (ACPI 6.x Table 5.50).
const (
	FlagsConforming uint16 = 0      // polarity and trigger as the bus defines (ISA: edge, high)
	FlagsActiveHigh uint16 = 1      // polarity bits 1:0 = 01
	FlagsActiveLow  uint16 = 3      // polarity bits 1:0 = 11
	FlagsEdge       uint16 = 1 << 2 // trigger bits 3:2 = 01
	FlagsLevel      uint16 = 3 << 2 // trigger bits 3:2 = 11
	FlagsSCI               = FlagsActiveHigh | FlagsLevel
	lint1           uint8  = 1
	allProcessors   uint8  = 0xFF
	allProcessorsX2 uint32 = 0xFFFFFFFF
)

// ISAOverrides returns the overrides QEMU's PC machine presents: ISA IRQ 0
// (the PIT) on GSI 2, and the SCI on its own GSI, level-triggered active
// high.
func ISAOverrides(sci uint8) []Override {
	return []Override{
		{Source: 0, GSI: 2, Flags: FlagsConforming},
		{Source: sci, GSI: uint32(sci), Flags: FlagsSCI},
	}
}

func madt(cfg *Config) ([]byte, error) {
	if cfg.CPUs < 1 || uint64(cfg.CPUs) > 1<<32-1 {
		return nil, fmt.Errorf("acpi: %d CPUs: need at least 1 and APIC IDs below 0xFFFFFFFF", cfg.CPUs)
	}
	t := header("APIC", 4, cfg.OEMID)
	t = le.AppendUint32(t, cfg.LAPICAddr)
	t = le.AppendUint32(t, madtPCATCompat)

	x2 := false
	for id := 0; id < cfg.CPUs; id++ {
		if id <= maxXAPICID {
			t = append(t, madtLocalAPIC, 8, uint8(id), uint8(id))
			t = le.AppendUint32(t, lapicEnabled)
			continue
		}
		x2 = true
		t = append(t, madtLocalX2APIC, 16, 0, 0)
		t = le.AppendUint32(t, uint32(id)) // x2APIC ID
		t = le.AppendUint32(t, lapicEnabled)
		t = le.AppendUint32(t, uint32(id)) // ACPI processor UID
	}
	for _, io := range cfg.IOAPICs {
		t = append(t, madtIOAPIC, 12, io.ID, 0)
		t = le.AppendUint32(t, io.Addr)
		t = le.AppendUint32(t, io.GSIBase)
	}
	for _, o := range cfg.Overrides {
		t = append(t, madtOverride, 10, 0 /* ISA bus */, o.Source)
		t = le.AppendUint32(t, o.GSI)
		t = le.AppendUint16(t, o.Flags)
	}
	t = append(t, madtLocalAPICNMI, 6, allProcessors, 0, 0, lint1)
	if x2 {
		t = append(t, madtLocalX2APICNMI, 12, 0, 0)
		t = le.AppendUint32(t, allProcessorsX2)
		t = append(t, lint1, 0, 0, 0)
	}
	return finish(t), nil
}
