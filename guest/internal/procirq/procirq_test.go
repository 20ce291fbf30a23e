package procirq

import (
	"slices"
	"strings"
	"testing"
)

const sample = `           CPU0       CPU1       
  4:        120          0  IR-IO-APIC    4-edge      ttyS0
 24:          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config
 25:         17          0  PCI-MSIX-0000:00:02.0   1-edge      virtio0-req.0
 26:          0         23  PCI-MSIX-0000:00:02.0   2-edge      virtio0-req.1
LOC:       5012       4990   Local timer interrupts
RES:         31         45   Rescheduling interrupts
CAL:        210        198   Function call interrupts
TLB:          3          7   TLB shootdowns
ERR:          0
`

func rowMap(t *Table) map[string]Row {
	m := map[string]Row{}
	for _, r := range t.Rows {
		m[r.Name] = r
	}
	return m
}

func TestParse(t *testing.T) {
	tab, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.CPUs, []int{0, 1}) {
		t.Errorf("CPUs %v", tab.CPUs)
	}
	got := rowMap(tab)
	if r := got["CAL"]; r.Total() != 408 || len(r.PerCPU) != 2 || r.Desc != "Function call interrupts" {
		t.Errorf("CAL row %+v", r)
	}
	if r := got["4"]; r.PerCPU[0] != 120 || r.Desc != "IR-IO-APIC 4-edge ttyS0" {
		t.Errorf("IRQ 4 row %+v", r)
	}
	if r := got["26"]; r.PerCPU[1] != 23 || r.Desc != "PCI-MSIX-0000:00:02.0 2-edge virtio0-req.1" {
		t.Errorf("IRQ 26 row %+v", r)
	}
	if r := got["ERR"]; r.Total() != 0 || len(r.PerCPU) != 1 {
		t.Errorf("ERR row %+v", r)
	}
	if _, err := Parse("garbage"); err == nil {
		t.Error("no error for input without a header")
	}
	if _, err := Parse("CPU0 CPUx\n"); err == nil {
		t.Error("no error for a header column that is not CPUn")
	}
}

// TestParseOfflineCPU: the header names only online CPUs; the columns
// follow it.
func TestParseOfflineCPU(t *testing.T) {
	tab, err := Parse("   CPU0  CPU2\n 25:  1  2  PCI-MSIX-0000:00:02.0 1-edge virtio0-req.0\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.CPUs, []int{0, 2}) || !slices.Equal(tab.Rows[0].PerCPU, []uint64{1, 2}) {
		t.Errorf("got %+v", tab)
	}
}

func TestDiff(t *testing.T) {
	before, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	after, err := Parse(strings.NewReplacer(
		"  17          0  PCI", "  117          0  PCI",
		"   0         23  PCI", "   5         40  PCI",
		"  5012       4990 ", "  5112       5000 ",
	).Replace(sample) + " 27:  3  4  PCI-MSIX-0000:00:03.0 1-edge virtio1-input\n")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	got := rowMap(d)
	for name, want := range map[string][]uint64{
		"25": {100, 0}, "26": {5, 17}, "LOC": {100, 10}, "CAL": {0, 0}, "ERR": {0},
		"27": {3, 4}, // new since before: counts from zero
	} {
		if !slices.Equal(got[name].PerCPU, want) {
			t.Errorf("diff of %s: %v, want %v", name, got[name].PerCPU, want)
		}
	}
	if got["26"].Desc != "PCI-MSIX-0000:00:02.0 2-edge virtio0-req.1" {
		t.Errorf("diff keeps descriptions: %q", got["26"].Desc)
	}
	if _, err := Diff(after, before); err == nil {
		t.Error("no error for counts that went down")
	}
}

// TestDiffCPUs: columns are matched by CPU number, not position.
func TestDiffCPUs(t *testing.T) {
	before, _ := Parse("  CPU0 CPU2\n 25: 10 20 x\n")
	after, _ := Parse("  CPU0 CPU1 CPU2\n 25: 11 5 22 x\n")
	d, err := Diff(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Rows[0].PerCPU, []uint64{1, 5, 2}) {
		t.Errorf("diff %v, want [1 5 2]", d.Rows[0].PerCPU)
	}
}
