package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchExits runs 'govmm bench-exits' with short loops: every kind
// has its repetitions under both VMMs, the floor VMM took exactly the
// loop's exits, and govmm counted exactly the loop's exits, of the named
// cause, in the loop's section. (The ratio is a benchmark figure, not
// asserted here.)
func TestBenchExits(t *testing.T) {
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		t.Skipf("SKIP: no usable /dev/kvm (%v): this test needs KVM", err)
	} else {
		f.Close()
	}
	for _, p := range []string{floorVMMPath(), filepath.Join(filepath.Dir(ipiGuestPath()), "floor.elf")} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIP: %s missing (run 'make floorvmm guests'): %v", p, err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if status := run([]string{"bench-exits", "--count", "300", "--reps", "2", "--out", out}, &stdout, &stderr); status != 0 {
		t.Fatalf("bench-exits exited %d:\n%s", status, stderr.String())
	}
	for _, want := range []string{"| port | pio_other | 300 | 2 |", "| mmio | mmio_other | 300 | 2 |", "| msr | msr_x2apic_tpr_write | 300 | 2 |"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, stdout.String())
		}
	}
	f, err := os.Open(filepath.Join(out, "report.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 {
		t.Fatalf("%d CSV rows, want 6 (3 kinds x 2 repetitions)", len(recs)-1)
	}
	for _, r := range recs[1:] {
		if r[6] != "300" || r[4] == "0" || r[5] == "0" {
			t.Errorf("row %v: want 300 govmm exits and cycles from both VMMs", r)
		}
	}
	// Bad input: one line, no panic.
	stderr.Reset()
	if status := run([]string{"bench-exits", "--floor", filepath.Join(out, "nope")}, &stdout, &stderr); status != exitError ||
		!strings.Contains(stderr.String(), "make floorvmm") {
		t.Errorf("a missing floor VMM: status %d, %q", status, stderr.String())
	}
}
