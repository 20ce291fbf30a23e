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

// Leaves 4 and 0x80000008 describe the topology leaf 0xB does: n cores of
// one thread each in one package.
func TestCPUIDTopologyAgrees(t *testing.T) {
	sup := []kvm.CPUIDEntry{
		{Function: 4, Index: 0, Flags: kvmCPUIDFlagSignificantIndex, EAX: 0x1C004121}, // L1 data: level 1, type 1, host sharing bits
		{Function: 4, Index: 3, Flags: kvmCPUIDFlagSignificantIndex, EAX: 0x1C03C163}, // L3 unified: level 3
		{Function: 4, Index: 4, Flags: kvmCPUIDFlagSignificantIndex, EAX: 0},          // no more caches
		{Function: 0x80000008, ECX: 0x7007},
		{Function: 0xB, Index: 1, Flags: kvmCPUIDFlagSignificantIndex},
	}
	for _, e := range cpuidFor(sup, 2, 6, cpuidOptions{}) {
		switch {
		case e.Function == 4 && e.Index == 0:
			if e.EAX>>26 != 7 || e.EAX>>14&0xFFF != 0 || e.EAX&0x3FFF != 0x0121 {
				t.Errorf("leaf 4.0 EAX = %#x: want cores-1 = 7 (8 APIC IDs for 6 CPUs), 1 thread sharing L1", e.EAX)
			}
		case e.Function == 4 && e.Index == 3:
			if e.EAX>>26 != 7 || e.EAX>>14&0xFFF != 7 {
				t.Errorf("leaf 4.3 EAX = %#x: want L3 shared by the package's 8 APIC IDs", e.EAX)
			}
		case e.Function == 4 && e.Index == 4:
			if e.EAX != 0 {
				t.Errorf("leaf 4.4 (no cache) EAX = %#x, want 0", e.EAX)
			}
		case e.Function == 0x80000008:
			if e.ECX&0xFF != 5 || e.ECX>>12&0xF != 3 {
				t.Errorf("leaf 0x80000008 ECX = %#x: want NC = 5, ApicIdSize = 3", e.ECX)
			}
		case e.Function == 0xB && e.Index == 1:
			if e.EAX != 3 || e.EBX != 6 || e.EDX != 2 {
				t.Errorf("leaf 0xB.1 = %#x %#x, x2APIC ID %d: want shift 3, 6 CPUs, ID 2", e.EAX, e.EBX, e.EDX)
			}
		}
	}
}
