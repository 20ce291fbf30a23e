package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/vmm"
)

// The exit bus of a Linux VM (govmm's kernel, 4 vCPUs, every PV feature
// and the remapping unit): every range once, none overlapping, and the
// ones the platform must have. A bare-metal guest when no kernel is built.
func TestBusMap(t *testing.T) {
	needKVM(t)
	path := filepath.Join(cacheDir(), "linux", "vmlinux")
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(guestDir(t), "ipi.elf")
	}
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vm, err := vmm.New(vmm.Config{CPUs: 4, Kernel: img, KernelPath: path, Console: &vmm.ConsoleLog{}, IOMMU: true, PVIPI: true, PVEOI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	m := vm.Map()
	t.Logf("exit bus of %s:", path)
	names := map[string]exitbus.Entry{}
	for i, e := range m {
		t.Logf("  %s", e)
		if _, dup := names[e.Name]; dup {
			t.Errorf("%s registered twice", e.Name)
		}
		names[e.Name] = e
		if i > 0 && m[i-1].Space == e.Space && m[i-1].End >= e.Base {
			t.Errorf("%s overlaps %s", m[i-1], e)
		}
		if i > 0 && (m[i-1].Space > e.Space || m[i-1].Space == e.Space && m[i-1].Base > e.Base) {
			t.Errorf("map not sorted at %s", e)
		}
	}
	for _, w := range []struct {
		name       string
		space      exitbus.Space
		base, end  uint64
		filter, pc bool
	}{
		{"COM1 serial", exitbus.PIO, 0x3F8, 0x3FF, false, false},
		{"debug exit", exitbus.PIO, 0xF4, 0xF7, false, false},
		{"ACPI PM timer", exitbus.PIO, 0x608, 0x60B, false, false},
		{"accounting marker", exitbus.PIO, 0x660, 0x67B, false, false},
		{"IOAPIC", exitbus.MMIO, 0xFEC00000, 0xFEC00FFF, false, false},
		{"VT-d remapping unit", exitbus.MMIO, 0xFED90000, 0xFED90FFF, false, false},
		{"xAPIC page", exitbus.MMIO, 0xFEE00000, 0xFEE00FFF, false, true},
		{"x2APIC", exitbus.MSR, 0x800, 0x8FF, false, true},
		{"APIC_BASE", exitbus.MSR, 0x1B, 0x1B, true, true},
		{"TSC_DEADLINE", exitbus.MSR, 0x6E0, 0x6E0, true, true},
		{"KVM_PV_EOI", exitbus.MSR, 0x4B564D04, 0x4B564D04, true, true},
		{"PV_SEND_IPI", exitbus.MSR, 0x4D564F50, 0x4D564F50, true, false},
		{"SYSCALL_ENTRY", exitbus.MSR, 0x4D564F51, 0x4D564F51, true, true},
	} {
		e, ok := names[w.name]
		if !ok || e.Space != w.space || e.Base != w.base || e.End != w.end || e.Filter != w.filter || e.PerCPU != w.pc {
			t.Errorf("%s: %+v (present %v), want %+v", w.name, e, ok, w)
		}
	}
	if e, ok := names["SYSCALL doorbell"]; ok != vm.SyscallDoorbell() || ok && e.Base != 0xFEB00000 {
		t.Errorf("SYSCALL doorbell page %+v present %v, doorbell offered %v", e, ok, vm.SyscallDoorbell())
	}
}
