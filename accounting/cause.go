// Package accounting counts every VM exit per vCPU and cause, and every IPI
// per destination kind, cheaply enough for the hot path: a fixed, typed set
// of causes indexes an array of atomic counters per vCPU (no maps, no locks,
// no allocation). Tables, JSON and later metrics are all derived from it.
package accounting

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

	CauseMMIOAPICRead  Cause = 0                             // + register
	CauseMMIOAPICWrite Cause = CauseMMIOAPICRead + apicRegs  // + register
	CauseMSRAPICRead   Cause = CauseMMIOAPICWrite + apicRegs // + register
	CauseMSRAPICWrite  Cause = CauseMSRAPICRead + apicRegs   // + register
	causeFixed         Cause = CauseMSRAPICWrite + apicRegs
)

// Causes that are not APIC registers.
const (
	CauseMSRTSCDeadlineRead Cause = causeFixed + iota
	CauseMSRTSCDeadlineWrite
	CauseMSRAPICBaseRead
	CauseMSRAPICBaseWrite
	CauseMSRPVIPI
	CauseMSRPVEOIRead
	CauseMSRPVEOIWrite
	CauseMSRSyscallEntryRead
	CauseMSRSyscallEntryWrite
	CauseMSROtherRead
	CauseMSROtherWrite
	CausePIOSerial
	CausePIODebugExit
	CausePIOFwCfg
	CausePIOTestDev
	CausePIOMark
	CausePIOMSITestDev
	CausePIOACPIPM
	CausePIOOther
	CauseMMIOIOAPICSelRead
	CauseMMIOIOAPICSelWrite
	CauseMMIOIOAPICWinRead
	CauseMMIOIOAPICWinWrite
	CauseMMIOIOAPICEOIWrite
	CauseMMIOIOAPICOther
	CauseMMIOIOMMURead
	CauseMMIOIOMMUWrite
	// CauseMMIOEarlyCon: the early console's page (devices.EarlyCon): a
	// write KVM's coalesced ring had no room for, or any access where the
	// host cannot coalesce.
	CauseMMIOEarlyCon
	CauseMMIOOther
	// PCI (package pci): configuration space through 0xCF8/0xCFC and ECAM,
	// MSI-X table and PBA accesses, any other BAR register; virtio's
	// notify writes that reached user space (no ioeventfd) and its other
	// transport registers (common, ISR, device configuration).
	CausePIOPCIConfig
	CauseMMIOPCIConfig
	CauseMMIOMSIXTable
	CausePCIBAR
	CauseVirtioNotify
	CauseVirtioConfig
	CauseSyscallDoorbell       // a guest SYSCALL completed by govmm (package pvsyscall)
	CauseSyscallDoorbellForged // any other access to the doorbell page: #GP(0) from CPL3, else ignored
	CauseHLT
	CauseIRQWindow
	CauseKick         // KVM_RUN interrupted by a kick that brought work (EINTR / immediate_exit)
	CauseKickSpurious // ... by a kick that found nothing new (a kick racing an exit)
	CauseSetTPR
	CauseRecoverInt3
	CauseRecoverIntN // int n (n != 3) in kernel mode: delivered through the IDT gate (vcpu/softint.go)
	CauseRecoverOther
	// The XSAVE family completed by govmm (vcpu/xsave.go), one exit each:
	// saves (XSAVE, XSAVEOPT, XSAVEC, XSAVES), restores (XRSTOR, XRSTORS),
	// XGETBV, XSETBV, and those that raised an exception instead.
	CauseRecoverXSAVE
	CauseRecoverXRSTOR
	CauseRecoverXGETBV
	CauseRecoverXSETBV
	CauseRecoverXStateFault
	CauseShutdown
	CauseOther
	NumCauses
)

// fixedCauses names and classifies each cause that is not an APIC
// register (those are named and classed by register: apicRegName,
// apicClass). Keyed by cause, so that no entry can stand in another's
// place; a cause left out has no name, which TestCauseNames catches.
var fixedCauses = [NumCauses]struct {
	name  string
	class Class
}{
	CauseMSRTSCDeadlineRead:    {"msr_tsc_deadline_read", ClassAPICOther},
	CauseMSRTSCDeadlineWrite:   {"msr_tsc_deadline_write", ClassAPICOther},
	CauseMSRAPICBaseRead:       {"msr_apic_base_read", ClassAPICOther},
	CauseMSRAPICBaseWrite:      {"msr_apic_base_write", ClassAPICOther},
	CauseMSRPVIPI:              {"msr_pv_send_ipi", ClassPVIPI},
	CauseMSRPVEOIRead:          {"msr_pv_eoi_read", ClassAPICOther},
	CauseMSRPVEOIWrite:         {"msr_pv_eoi_write", ClassAPICOther},
	CauseMSRSyscallEntryRead:   {"msr_syscall_entry_read", ClassDoorbell},
	CauseMSRSyscallEntryWrite:  {"msr_syscall_entry_write", ClassDoorbell},
	CauseMSROtherRead:          {"msr_other_read", ClassOther},
	CauseMSROtherWrite:         {"msr_other_write", ClassOther},
	CausePIOSerial:             {"pio_serial", ClassPIO},
	CausePIODebugExit:          {"pio_debug_exit", ClassPIO},
	CausePIOFwCfg:              {"pio_fw_cfg", ClassPIO},
	CausePIOTestDev:            {"pio_testdev", ClassPIO},
	CausePIOMark:               {"pio_mark", ClassPIO},
	CausePIOMSITestDev:         {"pio_msi_testdev", ClassPIO},
	CausePIOACPIPM:             {"pio_acpi_pm", ClassPIO},
	CausePIOOther:              {"pio_other", ClassPIO},
	CauseMMIOIOAPICSelRead:     {"mmio_ioapic_ioregsel_read", ClassIOAPIC},
	CauseMMIOIOAPICSelWrite:    {"mmio_ioapic_ioregsel_write", ClassIOAPIC},
	CauseMMIOIOAPICWinRead:     {"mmio_ioapic_iowin_read", ClassIOAPIC},
	CauseMMIOIOAPICWinWrite:    {"mmio_ioapic_iowin_write", ClassIOAPIC},
	CauseMMIOIOAPICEOIWrite:    {"mmio_ioapic_eoi_write", ClassIOAPIC},
	CauseMMIOIOAPICOther:       {"mmio_ioapic_other", ClassIOAPIC},
	CauseMMIOIOMMURead:         {"mmio_iommu_read", ClassIOMMU},
	CauseMMIOIOMMUWrite:        {"mmio_iommu_write", ClassIOMMU},
	CauseMMIOEarlyCon:          {"mmio_early_console", ClassOther},
	CauseMMIOOther:             {"mmio_other", ClassOther},
	CausePIOPCIConfig:          {"pio_pci_config", ClassPCI},
	CauseMMIOPCIConfig:         {"mmio_pci_config", ClassPCI},
	CauseMMIOMSIXTable:         {"mmio_msix_table", ClassPCI},
	CausePCIBAR:                {"pci_bar", ClassPCI},
	CauseVirtioNotify:          {"virtio_notify", ClassVirtio},
	CauseVirtioConfig:          {"virtio_config", ClassVirtio},
	CauseSyscallDoorbell:       {"syscall_doorbell", ClassDoorbell},
	CauseSyscallDoorbellForged: {"syscall_doorbell_forged", ClassDoorbell},
	CauseHLT:                   {"hlt", ClassHLT},
	CauseIRQWindow:             {"irq_window", ClassIRQWindow},
	CauseKick:                  {"kick", ClassKick},
	CauseKickSpurious:          {"kick_spurious", ClassKickSpurious},
	CauseSetTPR:                {"set_tpr", ClassAPICOther},
	CauseRecoverInt3:           {"recover_int3", ClassRecover},
	CauseRecoverIntN:           {"recover_int_n", ClassRecover},
	CauseRecoverOther:          {"recover_other", ClassRecover},
	CauseRecoverXSAVE:          {"recover_xsave", ClassRecover},
	CauseRecoverXRSTOR:         {"recover_xrstor", ClassRecover},
	CauseRecoverXGETBV:         {"recover_xgetbv", ClassRecover},
	CauseRecoverXSETBV:         {"recover_xsetbv", ClassRecover},
	CauseRecoverXStateFault:    {"recover_xstate_fault", ClassRecover},
	CauseShutdown:              {"shutdown", ClassOther},
	CauseOther:                 {"other", ClassOther},
}

// apicRegName is register r's name as vlapic gives it (vlapic.Register).
func apicRegName(r int) string { return vlapic.Register(r).String() }

// String names the cause as it appears in tables, JSON and metrics.
func (c Cause) String() string {
	switch {
	case c < CauseMMIOAPICWrite:
		return "mmio_apic_" + apicRegName(int(c-CauseMMIOAPICRead)) + "_read"
	case c < CauseMSRAPICRead:
		return "mmio_apic_" + apicRegName(int(c-CauseMMIOAPICWrite)) + "_write"
	case c < CauseMSRAPICWrite:
		return "msr_x2apic_" + apicRegName(int(c-CauseMSRAPICRead)) + "_read"
	case c < causeFixed:
		return "msr_x2apic_" + apicRegName(int(c-CauseMSRAPICWrite)) + "_write"
	case c < NumCauses && fixedCauses[c].name != "":
		return fixedCauses[c].name
	}
	return fmt.Sprintf("cause%d", c)
}

// APICCause returns the cause of an APIC register access.
func APICCause(x2apic, write bool, reg uint16) Cause {
	r := Cause(reg & (apicRegs - 1))
	switch {
	case !x2apic && !write:
		return CauseMMIOAPICRead + r
	case !x2apic:
		return CauseMMIOAPICWrite + r
	case !write:
		return CauseMSRAPICRead + r
	}
	return CauseMSRAPICWrite + r
}

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
