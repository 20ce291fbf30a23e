package vmm

import (
	"testing"

	"github.com/govmm/govmm/vlapic"
)

// With more than 255 CPUs every LAPIC is handed over in x2APIC mode, so
// that an INIT to APIC ID 1 reaches CPU 1 alone: left at reset (xAPIC),
// CPU 257 answered to its 8-bit xAPIC ID 1 as well, and a 288-vCPU Linux
// boot ran CPU 1's start-up code on two vCPUs.
func TestX2APICHandoff(t *testing.T) {
	init1 := vlapic.Message{Dest: 1, DestMode: vlapic.Physical, Delivery: vlapic.INIT, Assert: true, Source: 0}
	for _, tc := range []struct {
		cpus    int
		x2      bool
		always  bool // Config.X2APICAtReset
		x2mode  bool // every LAPIC in x2APIC mode after the hand-off
		targets int  // CPUs the INIT to ID 1 reaches
	}{
		{288, true, false, true, 1},
		{256, true, false, true, 1},
		{255, true, false, false, 1},
		{64, true, false, false, 1},
		{64, false, false, false, 1},
		{2, true, true, true, 1},
		{2, false, true, false, 1}, // no x2APIC to hand over in
	} {
		bus := vlapic.NewBus(tc.cpus, nil, nil, vlapic.Options{X2APIC: tc.x2})
		var synced []int
		if err := x2APICHandoff(tc.cpus, bus, tc.x2, tc.always, func(i int, base uint64) error {
			if base&vlapic.BaseEXTD == 0 {
				t.Errorf("%d CPUs: KVM's APIC_BASE of CPU %d given as %#x", tc.cpus, i, base)
			}
			synced = append(synced, i)
			return nil
		}); err != nil {
			t.Fatalf("%d CPUs: %v", tc.cpus, err)
		}
		if n := bus.Deliver(init1); n != tc.targets {
			t.Errorf("%d CPUs (x2APIC offered %v): INIT to APIC ID 1 reached %d CPUs, want %d", tc.cpus, tc.x2, n, tc.targets)
		}
		for i := range tc.cpus {
			if m := bus.LAPIC(i).Mode(); (m == vlapic.ModeX2APIC) != tc.x2mode {
				t.Fatalf("%d CPUs (x2APIC offered %v): CPU %d in mode %v", tc.cpus, tc.x2, i, m)
			}
		}
		if tc.x2mode && len(synced) != tc.cpus {
			t.Errorf("%d CPUs: KVM's APIC_BASE synced for %d", tc.cpus, len(synced))
		}
		if bus.LAPIC(0).Base()&vlapic.BaseBSP == 0 {
			t.Errorf("%d CPUs: CPU 0 lost BSP", tc.cpus)
		}
	}
}

// With KVM's LAPIC (no govmm LAPICs) the hand-off writes KVM's APIC_BASE
// alone, at its reset value with EXTD: enabled, x2APIC, BSP on CPU 0 only.
func TestX2APICHandoffKVMLAPIC(t *testing.T) {
	var bases []uint64
	if err := x2APICHandoff(288, nil, true, false, func(i int, base uint64) error {
		bases = append(bases, base)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := uint64(vlapic.DefaultBase) | vlapic.BaseEN | vlapic.BaseEXTD
	if len(bases) != 288 || bases[0] != want|vlapic.BaseBSP || bases[1] != want || bases[287] != want {
		t.Errorf("%d bases, CPU 0 %#x, 1 %#x; want 288, %#x and %#x", len(bases), bases[0], bases[1], want|vlapic.BaseBSP, want)
	}
	if err := x2APICHandoff(64, nil, true, false, func(int, uint64) error { t.Error("handed over 64 CPUs"); return nil }); err != nil {
		t.Fatal(err)
	}
}
