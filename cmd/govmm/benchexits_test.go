package main

import (
	"bytes"
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
	needKVM(t)
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
	recs, _ := readReportCSV(t, out)
	if len(recs) != 6 {
		t.Fatalf("%d CSV rows, want 6 (3 kinds x 2 repetitions)", len(recs))
	}
	for _, r := range recs {
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
