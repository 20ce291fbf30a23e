package vmm

import (
	"testing"

	"github.com/govmm/govmm/kvm"
)

// CPUID.1:ECX: TSC-deadline mode only when asked for (the host probe's
// answer), XSAVE whenever KVM offers leaf 0xD (govmm completes the XSAVE
// family where KVM cannot), x2APIC as configured, the hypervisor bit.
func TestCPUIDLeaf1(t *testing.T) {
	supported := []kvm.CPUIDEntry{{Function: 1, ECX: cpuid1ECXTSCDeadline}, {Function: 0xD, Index: 0, Flags: kvmCPUIDFlagSignificantIndex, EAX: 7}}
	leaf1 := func(o cpuidOptions, sup []kvm.CPUIDEntry) uint32 {
		for _, e := range cpuidFor(sup, 0, 1, o) {
			if e.Function == 1 {
				return e.ECX
			}
		}
		t.Fatal("no leaf 1")
		return 0
	}
	if ecx := leaf1(cpuidOptions{}, supported); ecx&cpuid1ECXTSCDeadline != 0 || ecx&cpuid1ECXXSAVE == 0 || ecx&cpuid1ECXHypervisor == 0 {
		t.Errorf("TSC deadline off: ECX %#x, want no TSC-deadline bit, XSAVE and hypervisor set", ecx)
	}
	if ecx := leaf1(cpuidOptions{tscDeadline: true, x2apic: true}, supported); ecx&cpuid1ECXTSCDeadline == 0 || ecx&cpuid1ECXX2APIC == 0 {
		t.Errorf("TSC deadline and x2APIC on: ECX %#x", ecx)
	}
	if ecx := leaf1(cpuidOptions{}, supported[:1]); ecx&cpuid1ECXXSAVE != 0 {
		t.Errorf("no leaf 0xD: ECX %#x has XSAVE", ecx)
	}
}

func TestXStateLayoutFromTable(t *testing.T) {
	table := []kvm.CPUIDEntry{
		{Function: 0xD, Index: 0, Flags: kvmCPUIDFlagSignificantIndex, EAX: 0x7, EBX: 0x340, ECX: 0x340},
		{Function: 0xD, Index: 2, Flags: kvmCPUIDFlagSignificantIndex, EAX: 0x100, EBX: 0x240},
	}
	l := xstateLayout(table)
	if l == nil || l.UserMask != 7 || l.Components[2].Offset != 0x240 || l.Components[2].Size != 0x100 || l.StandardSize(7) != 0x340 {
		t.Errorf("layout %+v", l)
	}
	if xstateLayout(table[1:2:2][:0]) != nil {
		t.Errorf("a table without leaf 0xD has a layout")
	}
}

// No PMU: Intel's leaf 0xA and AMD's PerfMonV2 leaf are zero and AMD's
// performance-counter bits are clear.
func TestCPUIDHidesPMU(t *testing.T) {
	sup := []kvm.CPUIDEntry{{Function: 0xA, EAX: 0x07300805, EDX: 0x8603}, {Function: 0x80000001, ECX: 1<<23 | 1<<24 | 1<<28 | 1},
		{Function: 0x80000022, EAX: 1, EBX: 6}}
	for _, e := range cpuidFor(sup, 0, 1, cpuidOptions{}) {
		switch e.Function {
		case 0xA, 0x80000022:
			if e.EAX|e.EBX|e.ECX|e.EDX != 0 {
				t.Errorf("leaf %#x = %#x %#x %#x %#x, want all zero", e.Function, e.EAX, e.EBX, e.ECX, e.EDX)
			}
		case 0x80000001:
			if e.ECX != 1 {
				t.Errorf("leaf 0x80000001 ECX = %#x, want only the unrelated bit 0", e.ECX)
			}
		}
	}
}

func TestDoorbellForcedOnNeedsAnEmulatingHost(t *testing.T) {
	if err := checkDoorbell(DoorbellOn, false); err == nil {
		t.Error("--syscall-doorbell=on accepted on a hardware-virtualization host")
	}
	for _, d := range []Doorbell{DoorbellOn, DoorbellAuto, DoorbellOff} {
		if err := checkDoorbell(d, true); err != nil {
			t.Errorf("doorbell %d on an emulating host: %v", d, err)
		}
	}
	if err := checkDoorbell(DoorbellAuto, false); err != nil {
		t.Errorf("auto on a hardware host: %v", err)
	}
}
