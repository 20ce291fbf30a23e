// Package exitcause names why a vCPU left KVM_RUN for govmm: a fixed,
// dense set of causes (each APIC register read and written, each device,
// each exit KVM reports on its own) and the classes a person reads them in.
// The vCPU loop and the exit bus's handlers give every exit its cause;
// package accounting counts by it.
package exitcause

import (
	"fmt"

	"github.com/govmm/govmm/vlapic"
)

// Cause is one reason a vCPU left KVM_RUN for govmm. Causes are dense small
// integers so that a vCPU's counters are one array.
type Cause uint16

// The APIC register causes are ranges indexed by register (xAPIC offset>>4,
// x2APIC MSR-0x800), so the ICR, EOI and every other register stand apart.
const (
	apicRegs = 64

	MMIOAPICRead  Cause = 0                        // + register
	MMIOAPICWrite Cause = MMIOAPICRead + apicRegs  // + register
	MSRAPICRead   Cause = MMIOAPICWrite + apicRegs // + register
	MSRAPICWrite  Cause = MSRAPICRead + apicRegs   // + register
	firstFixed    Cause = MSRAPICWrite + apicRegs
)

// Causes that are not APIC registers.
const (
	MSRTSCDeadlineRead Cause = firstFixed + iota
	MSRTSCDeadlineWrite
	MSRAPICBaseRead
	MSRAPICBaseWrite
	MSRPVIPI
	MSRPVEOIRead
	MSRPVEOIWrite
	MSRSyscallEntryRead
	MSRSyscallEntryWrite
	MSROtherRead
	MSROtherWrite
	PIOSerial
	PIODebugExit
	PIOFwCfg
	PIOTestDev
	PIOMark
	PIOMSITestDev
	PIOACPIPM
	PIOOther
	MMIOIOAPICSelRead
	MMIOIOAPICSelWrite
	MMIOIOAPICWinRead
	MMIOIOAPICWinWrite
	MMIOIOAPICEOIWrite
	MMIOIOAPICOther
	// IOAPICEOIExit: KVM's LAPIC (--lapic=kvm) sent the EOI of a vector
	// the user-space IOAPIC routes level-triggered back to it
	// (KVM_EXIT_IOAPIC_EOI).
	IOAPICEOIExit
	MMIOIOMMURead
	MMIOIOMMUWrite
	// MMIOEarlyCon: the early console's page (devices.EarlyCon): a
	// write KVM's coalesced ring had no room for, or any access where the
	// host cannot coalesce.
	MMIOEarlyCon
	MMIOOther
	// PCI (package pci): configuration space through 0xCF8/0xCFC and ECAM,
	// MSI-X table and PBA accesses, any other BAR register; virtio's
	// notify writes that reached user space (no ioeventfd) and its other
	// transport registers (common, ISR, device configuration).
	PIOPCIConfig
	MMIOPCIConfig
	MMIOMSIXTable
	PCIBAR
	VirtioNotify
	VirtioConfig
	SyscallDoorbell       // a guest SYSCALL completed by govmm (package pvsyscall)
	SyscallDoorbellForged // any other access to the doorbell page: #GP(0) from CPL3, else ignored
	HLT
	IRQWindow
	Kick         // KVM_RUN interrupted by a kick that brought work (EINTR / immediate_exit)
	KickSpurious // ... by a kick that found nothing new (a kick racing an exit)
	SetTPR
	RecoverInt3
	RecoverIntN // int n (n != 3) in kernel mode: delivered through the IDT gate (complete/softint.go)
	RecoverOther
	// The XSAVE family completed by govmm (complete/xsave.go), one exit each:
	// saves (XSAVE, XSAVEOPT, XSAVEC, XSAVES), restores (XRSTOR, XRSTORS),
	// XGETBV, XSETBV, and those that raised an exception instead.
	RecoverXSAVE
	RecoverXRSTOR
	RecoverXGETBV
	RecoverXSETBV
	RecoverXStateFault
	Shutdown
	Other
	NumCauses
)

// fixedTable names and classifies each cause that is not an APIC
// register (those are named and classed by register: apicRegName,
// apicClass). Keyed by cause, so that no entry can stand in another's
// place; a cause left out has no name, which TestCauseNames catches.
var fixedTable = [NumCauses]struct {
	name  string
	class Class
}{
	MSRTSCDeadlineRead:    {"msr_tsc_deadline_read", ClassAPICOther},
	MSRTSCDeadlineWrite:   {"msr_tsc_deadline_write", ClassAPICOther},
	MSRAPICBaseRead:       {"msr_apic_base_read", ClassAPICOther},
	MSRAPICBaseWrite:      {"msr_apic_base_write", ClassAPICOther},
	MSRPVIPI:              {"msr_pv_send_ipi", ClassPVIPI},
	MSRPVEOIRead:          {"msr_pv_eoi_read", ClassAPICOther},
	MSRPVEOIWrite:         {"msr_pv_eoi_write", ClassAPICOther},
	MSRSyscallEntryRead:   {"msr_syscall_entry_read", ClassDoorbell},
	MSRSyscallEntryWrite:  {"msr_syscall_entry_write", ClassDoorbell},
	MSROtherRead:          {"msr_other_read", ClassOther},
	MSROtherWrite:         {"msr_other_write", ClassOther},
	PIOSerial:             {"pio_serial", ClassPIO},
	PIODebugExit:          {"pio_debug_exit", ClassPIO},
	PIOFwCfg:              {"pio_fw_cfg", ClassPIO},
	PIOTestDev:            {"pio_testdev", ClassPIO},
	PIOMark:               {"pio_mark", ClassPIO},
	PIOMSITestDev:         {"pio_msi_testdev", ClassPIO},
	PIOACPIPM:             {"pio_acpi_pm", ClassPIO},
	PIOOther:              {"pio_other", ClassPIO},
	MMIOIOAPICSelRead:     {"mmio_ioapic_ioregsel_read", ClassIOAPIC},
	MMIOIOAPICSelWrite:    {"mmio_ioapic_ioregsel_write", ClassIOAPIC},
	MMIOIOAPICWinRead:     {"mmio_ioapic_iowin_read", ClassIOAPIC},
	MMIOIOAPICWinWrite:    {"mmio_ioapic_iowin_write", ClassIOAPIC},
	MMIOIOAPICEOIWrite:    {"mmio_ioapic_eoi_write", ClassIOAPIC},
	MMIOIOAPICOther:       {"mmio_ioapic_other", ClassIOAPIC},
	IOAPICEOIExit:         {"ioapic_eoi_exit", ClassIOAPIC},
	MMIOIOMMURead:         {"mmio_iommu_read", ClassIOMMU},
	MMIOIOMMUWrite:        {"mmio_iommu_write", ClassIOMMU},
	MMIOEarlyCon:          {"mmio_early_console", ClassOther},
	MMIOOther:             {"mmio_other", ClassOther},
	PIOPCIConfig:          {"pio_pci_config", ClassPCI},
	MMIOPCIConfig:         {"mmio_pci_config", ClassPCI},
	MMIOMSIXTable:         {"mmio_msix_table", ClassPCI},
	PCIBAR:                {"pci_bar", ClassPCI},
	VirtioNotify:          {"virtio_notify", ClassVirtio},
	VirtioConfig:          {"virtio_config", ClassVirtio},
	SyscallDoorbell:       {"syscall_doorbell", ClassDoorbell},
	SyscallDoorbellForged: {"syscall_doorbell_forged", ClassDoorbell},
	HLT:                   {"hlt", ClassHLT},
	IRQWindow:             {"irq_window", ClassIRQWindow},
	Kick:                  {"kick", ClassKick},
	KickSpurious:          {"kick_spurious", ClassKickSpurious},
	SetTPR:                {"set_tpr", ClassAPICOther},
	RecoverInt3:           {"recover_int3", ClassRecover},
	RecoverIntN:           {"recover_int_n", ClassRecover},
	RecoverOther:          {"recover_other", ClassRecover},
	RecoverXSAVE:          {"recover_xsave", ClassRecover},
	RecoverXRSTOR:         {"recover_xrstor", ClassRecover},
	RecoverXGETBV:         {"recover_xgetbv", ClassRecover},
	RecoverXSETBV:         {"recover_xsetbv", ClassRecover},
	RecoverXStateFault:    {"recover_xstate_fault", ClassRecover},
	Shutdown:              {"shutdown", ClassOther},
	Other:                 {"other", ClassOther},
}

// apicRegName is register r's name as vlapic gives it (vlapic.Register).
func apicRegName(r int) string { return vlapic.Register(r).String() }

// String names the cause as it appears in tables, JSON and metrics.
func (c Cause) String() string {
	switch {
	case c < MMIOAPICWrite:
		return "mmio_apic_" + apicRegName(int(c-MMIOAPICRead)) + "_read"
	case c < MSRAPICRead:
		return "mmio_apic_" + apicRegName(int(c-MMIOAPICWrite)) + "_write"
	case c < MSRAPICWrite:
		return "msr_x2apic_" + apicRegName(int(c-MSRAPICRead)) + "_read"
	case c < firstFixed:
		return "msr_x2apic_" + apicRegName(int(c-MSRAPICWrite)) + "_write"
	case c < NumCauses && fixedTable[c].name != "":
		return fixedTable[c].name
	}
	return fmt.Sprintf("cause%d", c)
}

// APIC returns the cause of an APIC register access.
func APIC(x2apic, write bool, reg uint16) Cause {
	r := Cause(reg & (apicRegs - 1))
	switch {
	case !x2apic && !write:
		return MMIOAPICRead + r
	case !x2apic:
		return MMIOAPICWrite + r
	case !write:
		return MSRAPICRead + r
	}
	return MSRAPICWrite + r
}
