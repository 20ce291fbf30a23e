package kvm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestABILayout compiles a C program against the installed kernel headers and
// compares every size and offset govmm relies on with the Go mirror types.
func TestABILayout(t *testing.T) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc is needed to check the KVM ABI against <linux/kvm.h>: %v", err)
	}
	var run Run
	var ev VCPUEvents
	checks := []struct {
		c   string
		go_ uintptr
	}{
		{"sizeof(struct kvm_regs)", unsafe.Sizeof(Regs{})},
		{"sizeof(struct kvm_segment)", unsafe.Sizeof(Segment{})},
		{"sizeof(struct kvm_dtable)", unsafe.Sizeof(DTable{})},
		{"sizeof(struct kvm_sregs)", unsafe.Sizeof(Sregs{})},
		{"offsetof(struct kvm_sregs, cr0)", unsafe.Offsetof(Sregs{}.CR0)},
		{"offsetof(struct kvm_sregs, apic_base)", unsafe.Offsetof(Sregs{}.APICBase)},
		{"sizeof(struct kvm_vcpu_events)", unsafe.Sizeof(VCPUEvents{})},
		{"offsetof(struct kvm_vcpu_events, nmi)", unsafe.Offsetof(ev.NMI)},
		{"offsetof(struct kvm_vcpu_events, sipi_vector)", unsafe.Offsetof(ev.SIPIVector)},
		{"offsetof(struct kvm_vcpu_events, flags)", unsafe.Offsetof(ev.Flags)},
		{"offsetof(struct kvm_vcpu_events, smi)", unsafe.Offsetof(ev.SMI)},
		{"offsetof(struct kvm_vcpu_events, exception_has_payload)", unsafe.Offsetof(ev.ExceptionHasPayload)},
		{"offsetof(struct kvm_vcpu_events, exception_payload)", unsafe.Offsetof(ev.ExceptionPayload)},
		{"sizeof(struct kvm_sync_regs)", unsafe.Sizeof(SyncRegs{})},
		{"sizeof(struct kvm_cpuid_entry2)", unsafe.Sizeof(CPUIDEntry{})},
		{"sizeof(struct kvm_cpuid2)", 8},
		{"sizeof(struct kvm_userspace_memory_region)", unsafe.Sizeof(UserspaceMemoryRegion{})},
		{"sizeof(struct kvm_enable_cap)", unsafe.Sizeof(EnableCap{})},
		{"sizeof(struct kvm_msr_filter_range)", unsafe.Sizeof(MSRFilterRange{})},
		{"offsetof(struct kvm_msr_filter_range, bitmap)", unsafe.Offsetof(MSRFilterRange{}.Bitmap)},
		{"sizeof(struct kvm_msr_filter)", unsafe.Sizeof(MSRFilter{})},
		{"sizeof(struct kvm_interrupt)", unsafe.Sizeof(Interrupt{})},
		{"sizeof(struct kvm_mp_state)", unsafe.Sizeof(MPState{})},
		{"sizeof(struct kvm_stats_header)", unsafe.Sizeof(StatsHeader{})},
		{"sizeof(struct kvm_stats_desc)", unsafe.Sizeof(statsDescFixed{})},
		{"sizeof(struct kvm_run)", unsafe.Sizeof(Run{})},
		{"offsetof(struct kvm_run, immediate_exit)", unsafe.Offsetof(run.ImmediateExit)},
		{"offsetof(struct kvm_run, exit_reason)", unsafe.Offsetof(run.ExitReason)},
		{"offsetof(struct kvm_run, ready_for_interrupt_injection)", unsafe.Offsetof(run.ReadyForInterruptInjection)},
		{"offsetof(struct kvm_run, if_flag)", unsafe.Offsetof(run.IFFlag)},
		{"offsetof(struct kvm_run, cr8)", unsafe.Offsetof(run.CR8)},
		{"offsetof(struct kvm_run, apic_base)", unsafe.Offsetof(run.APICBase)},
		{"offsetof(struct kvm_run, io)", unsafe.Offsetof(run.Exit)},
		{"offsetof(struct kvm_run, kvm_valid_regs)", unsafe.Offsetof(run.ValidRegs)},
		{"offsetof(struct kvm_run, kvm_dirty_regs)", unsafe.Offsetof(run.DirtyRegs)},
		{"offsetof(struct kvm_run, s)", unsafe.Offsetof(run.Sync)},
		{"offsetof(struct kvm_run, io.data_offset) - offsetof(struct kvm_run, io)", unsafe.Offsetof(IOExit{}.DataOffset)},
		{"offsetof(struct kvm_run, mmio.len) - offsetof(struct kvm_run, io)", unsafe.Offsetof(MMIOExit{}.Len)},
		{"offsetof(struct kvm_run, mmio.is_write) - offsetof(struct kvm_run, io)", unsafe.Offsetof(MMIOExit{}.IsWrite)},
		{"offsetof(struct kvm_run, msr.reason) - offsetof(struct kvm_run, io)", unsafe.Offsetof(MSRExit{}.Reason)},
		{"offsetof(struct kvm_run, msr.index) - offsetof(struct kvm_run, io)", unsafe.Offsetof(MSRExit{}.Index)},
		{"offsetof(struct kvm_run, msr.data) - offsetof(struct kvm_run, io)", unsafe.Offsetof(MSRExit{}.Data)},
		{"offsetof(struct kvm_run, internal.data) - offsetof(struct kvm_run, io)", unsafe.Offsetof(InternalExit{}.Data)},
		{"offsetof(struct kvm_run, emulation_failure.insn_size) - offsetof(struct kvm_run, io)", unsafe.Offsetof(EmulationFailure{}.InsnSize)},
		{"offsetof(struct kvm_run, emulation_failure.insn_bytes) - offsetof(struct kvm_run, io)", unsafe.Offsetof(EmulationFailure{}.InsnBytes)},
		{"offsetof(struct kvm_run, system_event.data) - offsetof(struct kvm_run, io)", unsafe.Offsetof(SystemEventExit{}.Data)},
		{"sizeof(struct kvm_xcrs)", unsafe.Sizeof(XCRs{})},
		{"sizeof(struct kvm_xcr)", unsafe.Sizeof(XCR{})},
		{"sizeof(struct kvm_xsave)", XSAVEMinSize},
		{"KVM_GET_XSAVE", kvmGetXSAVE},
		{"KVM_SET_XSAVE", kvmSetXSAVE},
		{"KVM_GET_XSAVE2", kvmGetXSAVE2},
		{"KVM_GET_XCRS", kvmGetXCRs},
		{"KVM_SET_XCRS", kvmSetXCRs},
		{"KVM_CAP_XSAVE2", CapXSAVE2},
		{"KVM_CAP_PMU_CAPABILITY", CapPMUCapability},
		{"KVM_PMU_CAP_DISABLE", PMUCapDisable},
		{"KVM_CAP_IOEVENTFD", CapIOEventFD},
		{"sizeof(struct kvm_ioeventfd)", unsafe.Sizeof(IOEventFD{})},
		{"offsetof(struct kvm_ioeventfd, fd)", unsafe.Offsetof(IOEventFD{}.FD)},
		{"KVM_IOEVENTFD", kvmIOEventFD},
		{"KVM_IOEVENTFD_FLAG_PIO", IOEventFDFlagPIO},
		{"KVM_RUN", kvmRun},
		{"KVM_SIGNAL_MSI", kvmSignalMSI},
		{"KVM_SET_GSI_ROUTING", kvmSetGSIRouting},
		{"KVM_GET_LAPIC", kvmGetLAPIC},
		{"KVM_SET_LAPIC", kvmSetLAPIC},
		{"sizeof(struct kvm_msi)", unsafe.Sizeof(MSI{})},
		{"sizeof(struct kvm_irq_routing_entry)", unsafe.Sizeof(IRQRoutingEntry{})},
		{"offsetof(struct kvm_irq_routing_entry, u.msi.address_lo)", unsafe.Offsetof(IRQRoutingEntry{}.AddressLo)},
		{"offsetof(struct kvm_irq_routing_entry, u.msi.data)", unsafe.Offsetof(IRQRoutingEntry{}.Data)},
		{"offsetof(struct kvm_irq_routing, entries)", unsafe.Offsetof(irqRouting{}.Entries)},
		{"sizeof(struct kvm_lapic_state)", unsafe.Sizeof(LAPICState{})},
		{"KVM_EXIT_IOAPIC_EOI", ExitIOAPICEOI},
		{"KVM_CAP_SPLIT_IRQCHIP", CapSplitIRQChip},
		{"KVM_CAP_X2APIC_API", CapX2APICAPI},
		{"KVM_CAP_SIGNAL_MSI", CapSignalMSI},
		{"KVM_CAP_IRQ_ROUTING", CapIRQRouting},
		{"KVM_CAP_TSC_DEADLINE_TIMER", CapTSCDeadlineTimer},
		{"KVM_X2APIC_API_USE_32BIT_IDS", X2APICAPIUse32BitIDs},
		{"KVM_X2APIC_API_DISABLE_BROADCAST_QUIRK", X2APICAPIDisableBroadcastQuirk},
		{"KVM_IRQ_ROUTING_MSI", IRQRoutingMSI},
		{"KVM_CAP_COALESCED_MMIO", CapCoalescedMMIO},
		{"KVM_CAP_READONLY_MEM", CapReadOnlyMem},
		{"KVM_MEM_READONLY", MemReadOnly},
		{"sizeof(struct kvm_coalesced_mmio_zone)", unsafe.Sizeof(CoalescedZone{})},
		{"sizeof(struct kvm_coalesced_mmio)", unsafe.Sizeof(CoalescedWrite{})},
		{"offsetof(struct kvm_coalesced_mmio, data)", unsafe.Offsetof(CoalescedWrite{}.Data)},
		{"sizeof(struct kvm_coalesced_mmio_ring)", unsafe.Sizeof(coalescedRingHead{})},
		{"((4096 - sizeof(struct kvm_coalesced_mmio_ring)) / sizeof(struct kvm_coalesced_mmio))", CoalescedRingEntries}, // KVM_COALESCED_MMIO_MAX with a 4 KiB page
		{"sizeof(struct kvm_debugregs)", unsafe.Sizeof(DebugRegs{})},
		{"offsetof(struct kvm_debugregs, dr7)", unsafe.Offsetof(DebugRegs{}.DR7)},
		{"KVM_SET_DEBUGREGS", kvmSetDebugRegs},
		{"KVM_GET_SUPPORTED_CPUID", kvmGetSupportedCPUID},
		{"KVM_SET_CPUID2", kvmSetCPUID2},
		{"KVM_SET_USER_MEMORY_REGION", kvmSetUserMemoryRegion},
		{"KVM_GET_REGS", kvmGetRegs},
		{"KVM_SET_SREGS", kvmSetSregs},
		{"KVM_INTERRUPT", kvmInterrupt},
		{"KVM_NMI", kvmNMI},
		{"KVM_SMI", kvmSMI},
		{"KVM_GET_DEBUGREGS", kvmGetDebugRegs},
		{"KVM_SET_MP_STATE", kvmSetMPState},
		{"KVM_GET_CLOCK", kvmGetClock},
		{"KVM_SET_CLOCK", kvmSetClock},
		{"sizeof(struct kvm_clock_data)", unsafe.Sizeof(ClockData{})},
		{"KVM_CAP_X86_SMM", CapX86SMM},
		{"KVM_CAP_MULTI_ADDRESS_SPACE", CapMultiAddressSpace},
		{"KVM_ENABLE_CAP", kvmEnableCap},
		{"KVM_GET_TSC_KHZ", kvmGetTSCKHz},
		{"KVM_GET_VCPU_EVENTS", kvmGetVCPUEvents},
		{"KVM_SET_VCPU_EVENTS", kvmSetVCPUEvents},
		{"KVM_X86_SET_MSR_FILTER", kvmX86SetMSRFilter},
		{"KVM_GET_STATS_FD", kvmGetStatsFD},
		{"KVM_SET_IDENTITY_MAP_ADDR", kvmSetIdentityMapAddr},
		{"KVM_GET_MP_STATE", kvmGetMPState},
		{"KVM_GET_MSRS", kvmGetMSRs},
		{"KVM_SET_MSRS", kvmSetMSRs},
		{"KVM_SET_SIGNAL_MASK", kvmSetSignalMask},
		{"offsetof(struct kvm_signal_mask, sigset)", unsafe.Offsetof(signalMaskHead{}.Sigset)},
		{"sizeof(struct kvm_msrs) + sizeof(struct kvm_msr_entry)", unsafe.Sizeof(msrsOne{})},
	}
	for _, i := range Ioctls { // the sandbox's table: each name is the number it says
		checks = append(checks, struct {
			c   string
			go_ uintptr
		}{i.Name, i.Request})
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <linux/kvm.h>\nint main(void){\n")
	for _, c := range checks {
		fmt.Fprintf(&src, "printf(\"%%lu\\n\", (unsigned long)(%s));\n", c.c)
	}
	src.WriteString("return 0;}\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "abi.c"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "abi")
	if out, err := exec.Command(cc, "-o", bin, filepath.Join(dir, "abi.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling the ABI probe: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(checks) {
		t.Fatalf("probe printed %d values, want %d", len(lines), len(checks))
	}
	for i, c := range checks {
		want, _ := strconv.ParseUint(lines[i], 10, 64)
		if uint64(c.go_) != want {
			t.Errorf("%s: Go has %d, <linux/kvm.h> has %d", c.c, c.go_, want)
		}
	}
}
