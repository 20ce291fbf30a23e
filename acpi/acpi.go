// Package acpi builds the ACPI tables govmm hands a guest: RSDP, XSDT/RSDT,
// FADT, FACS, DSDT, MADT and, optionally, a DMAR describing an
// interrupt-remapping unit and an MCFG with the DSDT's PCI host bridge
// (PCIHost). They are what decides Linux's APIC mode: the MADT
// lists the CPUs (x2APIC entries for APIC IDs above 254), and a DMAR with
// INTR_REMAP set, X2APIC_OPT_OUT clear and every IOAPIC in a DRHD's scope lets
// Linux turn interrupt remapping on (and with it x2APIC cluster mode).
//
// One file per table, each opening with the spec section it follows and what
// it leaves out; Build lays them out in guest-physical memory. Specs: ACPI
// 6.x ch. 5, Intel VT-d ch. 8.
//
// Placement govmm uses: RSDP at 0xE0000 (16-byte aligned, inside the BIOS
// area Linux scans when no boot protocol passes the address, and inside the
// E820 reserved range 0x9FC00-0x100000), tables packed from 0xE0040 upwards.
package acpi

import (
	"errors"
	"fmt"
)

// IOAPIC is one I/O APIC.
type IOAPIC struct {
	ID       uint8
	Addr     uint32 // MMIO base, e.g. 0xFEC00000
	GSIBase  uint32
	SourceID uint16 // PCI requester ID bus<<8|dev<<3|fn for the DMAR scope, e.g. 0x00F0 = 00:1e.0
}

// DMAR describes the interrupt-remapping unit.
type DMAR struct {
	RegBase       uint64 // register page, e.g. 0xFED90000
	X2APICOptOut  bool   // asks the OS not to use x2APIC with remapping
	IntrRemap     bool   // interrupt remapping supported
	HostAddrWidth uint8  // DMA address width in bits, e.g. 39 (stored as 38)
}

// PM describes the ACPI fixed-hardware PM registers (I/O ports).
type PM struct {
	PM1aEvt    uint16 // 4 bytes: PM1_STS, PM1_EN
	PM1aCnt    uint16 // 2 bytes: PM1_CNT (see PoweroffValue)
	SCI        uint8  // ISA IRQ / GSI of the SCI, e.g. 9
	ResetPort  uint16 // FADT reset register, e.g. 0xCF9
	ResetValue uint8  // value written there to reset, e.g. 0x6
	PMTimer    uint16 // 4 bytes: the 32-bit PM timer; 0: none
}

// Override is an ISA interrupt source override (MADT type 2, bus 0).
type Override struct {
	Source uint8  // ISA IRQ
	GSI    uint32 // global system interrupt it is wired to
	Flags  uint16 // MPS INTI flags: Flags* constants
}

// Config is what the tables describe.
type Config struct {
	CPUs      int    // APIC IDs 0..CPUs-1, ACPI processor UID = APIC ID
	LAPICAddr uint32 // 0 means 0xFEE00000
	IOAPICs   []IOAPIC
	Overrides []Override // e.g. ISAOverrides(9)
	PM        PM
	DMAR      *DMAR    // nil: no DMAR table
	PCI       *PCIHost // nil: no PCI host bridge (no MCFG, no \_SB.PCI0)
	OEMID     string   // up to 6 characters; "" means "GOVMM "
}

// DefaultLAPICAddr is the architectural local APIC base.
const DefaultLAPICAddr = 0xFEE00000

// Build lays out the RSDP (36 bytes, revision 2) at rsdpAddr and every other
// table packed from tablesAddr (FACS 64-byte aligned, the others 8-byte
// aligned), with their lengths, checksums and physical pointers filled. It
// returns the bytes to copy at rsdpAddr and at tablesAddr.
func Build(cfg Config, rsdpAddr, tablesAddr uint64) (rsdpBytes []byte, tables []byte, err error) {
	if cfg.OEMID == "" {
		cfg.OEMID = "GOVMM "
	}
	if len(cfg.OEMID) > 6 {
		return nil, nil, fmt.Errorf("acpi: OEM ID %q is longer than 6 bytes", cfg.OEMID)
	}
	cfg.OEMID = fmt.Sprintf("%-6s", cfg.OEMID)
	if cfg.LAPICAddr == 0 {
		cfg.LAPICAddr = DefaultLAPICAddr
	}
	if rsdpAddr%16 != 0 {
		return nil, nil, fmt.Errorf("acpi: RSDP address %#x is not 16-byte aligned", rsdpAddr)
	}
	if cfg.DMAR != nil && cfg.DMAR.HostAddrWidth == 0 {
		return nil, nil, errors.New("acpi: DMAR host address width is 0")
	}
	if cfg.PM.PM1aEvt == 0 || cfg.PM.PM1aCnt == 0 {
		return nil, nil, errors.New("acpi: PM1a event and control ports are required")
	}
	if cfg.PCI != nil {
		if err := cfg.PCI.check(); err != nil {
			return nil, nil, err
		}
	}
	apic, err := madt(&cfg)
	if err != nil {
		return nil, nil, err
	}

	// Layout: FACS, DSDT, FADT, MADT, [DMAR], [MCFG], XSDT, RSDT.
	var blob []byte
	place := func(t []byte, align uint64) uint64 {
		for (tablesAddr+uint64(len(blob)))%align != 0 {
			blob = append(blob, 0)
		}
		addr := tablesAddr + uint64(len(blob))
		blob = append(blob, t...)
		return addr
	}
	facsAddr := place(facs(), facsAlign)
	dsdtAddr := place(dsdt(cfg.OEMID, cfg.PCI), 8)
	pointed := []uint64{
		place(fadt(cfg.PM, cfg.OEMID, facsAddr, dsdtAddr), 8),
		place(apic, 8),
	}
	if cfg.DMAR != nil {
		pointed = append(pointed, place(dmar(cfg.DMAR, cfg.IOAPICs, cfg.OEMID), 8))
	}
	if cfg.PCI != nil {
		pointed = append(pointed, place(mcfg(cfg.PCI, cfg.OEMID), 8))
	}
	xsdtAddr := place(xsdt(cfg.OEMID, pointed), 8)
	var rsdtAddr uint64
	if end := tablesAddr + uint64(len(blob)) + headerLen + 4*uint64(len(pointed)); end <= 1<<32 {
		rsdtAddr = place(rsdt(cfg.OEMID, pointed), 8)
	}

	if rsdpAddr+rsdpLen > tablesAddr && tablesAddr+uint64(len(blob)) > rsdpAddr {
		return nil, nil, fmt.Errorf("acpi: RSDP at %#x overlaps the tables at %#x-%#x",
			rsdpAddr, tablesAddr, tablesAddr+uint64(len(blob)))
	}
	return rsdp(cfg.OEMID, uint32(rsdtAddr), xsdtAddr), blob, nil
}
