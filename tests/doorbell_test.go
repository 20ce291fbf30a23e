package tests

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

// TestDoorbellForgery: user code that rings the SYSCALL doorbell without
// SYSCALL (stores from its own code, jumps into the trampoline with forged
// RCX and R11, the doorbell not armed) gets #GP(0) and never reaches the
// kernel entry; genuine SYSCALLs still complete (the guest checks both).
// govmm counts each forgery, plus the guest's one read of the page and one
// write from CPL0, as syscall_doorbell_forged, and only the 3 genuine
// SYSCALLs as syscall_doorbell.
func TestDoorbellForgery(t *testing.T) {
	needKVM(t)
	if !hostEmulates(t) {
		t.Skip("SKIP: with hardware virtualization govmm does not offer the doorbell")
	}
	g := runGuest(t, "doorbell.elf", 1, true, "")
	m := regexp.MustCompile(`# trampoline \S+, entry \S+, (\d+) forgeries`).FindStringSubmatch(g.Console)
	if m == nil {
		t.Fatalf("the guest did not say how many forgeries it tries:\n%s", g.Console)
	}
	forgeries, _ := strconv.ParseUint(m[1], 10, 64)
	if forgeries < 20 {
		t.Errorf("only %d forgeries", forgeries)
	}
	r := g.Report.CPUs[0]
	if got := exits(r, exitcause.SyscallDoorbell); got != 3 {
		t.Errorf("completed doorbell exits = %d, want 3 (the genuine SYSCALLs)", got)
	}
	if got, want := exits(r, exitcause.SyscallDoorbellForged), forgeries+2; got != want {
		t.Errorf("forged doorbell exits = %d, want %d (%d forgeries, a read, a write from CPL0)", got, want, forgeries)
	}
	t.Logf("%d forgeries refused, 3 genuine SYSCALLs completed", forgeries)
}
