package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// TestXSAVEFamily: the XSAVE family in kernel mode behaves as the
// architecture says (the guest checks XCR0's reset value and XSETBV's
// checks, XRSTOR then XSAVE and XSAVEC round trips, initial state, #UD
// without CR4.OSXSAVE, #GP for misaligned areas and malformed headers).
// On emulating hosts govmm completes them: each is one exit of its own
// cause, and every one the guest issues is counted exactly. XSETBV is
// completed by KVM's own emulator there (em_xsetbv) as measured on the
// development host; were it left to govmm, its 4 refused writes would be
// faults and its one good write a recover_xsetbv.
func TestXSAVEFamily(t *testing.T) {
	if hostprobe.DetectEmulator() == hostprobe.QEMUTCG {
		testXSAVEUnderQEMUTCG(t)
		return
	}
	g := runGuest(t, "xsave.elf", 1, true, "")
	tot := g.Report.Total
	if !hostEmulates(t) {
		for _, c := range []exitcause.Cause{exitcause.RecoverXSAVE, exitcause.RecoverXRSTOR,
			exitcause.RecoverXGETBV, exitcause.RecoverXSETBV, exitcause.RecoverXStateFault} {
			if n := exits(tot, c); n != 0 {
				t.Errorf("%s = %d on hardware virtualization, want 0", c, n)
			}
		}
		return
	}
	for c, want := range map[exitcause.Cause]uint64{
		exitcause.RecoverXSAVE:  5, // 4 XSAVE, 1 XSAVEC
		exitcause.RecoverXRSTOR: 7,
		exitcause.RecoverXGETBV: 6,
	} {
		if got := exits(tot, c); got != want {
			t.Errorf("%s = %d, want %d", c, got, want)
		}
	}
	// 1 #UD (XGETBV without OSXSAVE) and 4 #GP (misaligned XSAVE and
	// XRSTOR, two malformed headers), plus XSETBV's 4 if govmm had them.
	xsetbv, faults := exits(tot, exitcause.RecoverXSETBV), exits(tot, exitcause.RecoverXStateFault)
	if !(xsetbv == 0 && faults == 5 || xsetbv == 1 && faults == 9) {
		t.Errorf("recover_xsetbv = %d, recover_xstate_fault = %d; want 0 and 5 (KVM's emulator has XSETBV) or 1 and 9", xsetbv, faults)
	}
}

// xsaveTCGErratum are the checks of xsave.elf that fail on the nested
// AMD-V host, and only those: QEMU's TCG does not report L2's XSETBV to
// L1's KVM (no SVM intercept), so KVM reloads the XCR0 it knows (1, x87
// only) at every VM entry, and an XRSTOR or XSAVE after the guest's next
// exit runs with XCR0 = 1. The same guest under QEMU with KVM's in-kernel
// APIC inside that host fails exactly these (docs/hosts.md); the guest
// kernel's "XSAVE consistency problem" warning there has the same cause.
var xsaveTCGErratum = []string{
	"FAIL XRSTOR then XSAVE: XMM0-7 as loaded",
	"FAIL XRSTOR then XSAVE: FCW and MXCSR as loaded",
	"FAIL XSAVE marks SSE in use in XSTATE_BV",
	"FAIL XRSTOR with EDX:EAX = x87 leaves XMM0",
}

// testXSAVEUnderQEMUTCG asserts what xsave.elf really gets on QEMU's TCG:
// the erratum's failures, every other check passing, no completion by
// govmm (hardware virtualization runs the XSAVE family itself).
func testXSAVEUnderQEMUTCG(t *testing.T) {
	vm, res, console := runGuestRaw(t, "xsave.elf", vmm.Config{CPUs: 1, IOMMU: true, PVIPI: true}, 2*time.Minute)
	if res.Err != nil {
		t.Fatalf("xsave.elf: %v\nconsole:\n%s", res.Err, console)
	}
	var fails []string
	oks := 0
	for _, l := range strings.Split(console, "\n") {
		switch {
		case strings.HasPrefix(l, "ok "):
			oks++
		case strings.HasPrefix(l, "FAIL ") && l != "FAIL xsave":
			fails = append(fails, l)
		}
	}
	if len(fails) != len(xsaveTCGErratum) || oks == 0 {
		t.Fatalf("%d checks failed, %d passed; want exactly QEMU TCG's XCR0 erratum (%d failures):\n%s", len(fails), oks, len(xsaveTCGErratum), console)
	}
	for i, want := range xsaveTCGErratum {
		if !strings.HasPrefix(fails[i], want) {
			t.Errorf("failure %d: %q, want %q (QEMU TCG's XCR0 erratum)", i, fails[i], want)
		}
	}
	tot := vm.Accounting().Report().Total
	for _, c := range []exitcause.Cause{exitcause.RecoverXSAVE, exitcause.RecoverXRSTOR,
		exitcause.RecoverXGETBV, exitcause.RecoverXSETBV, exitcause.RecoverXStateFault} {
		if n := exits(tot, c); n != 0 {
			t.Errorf("%s = %d on hardware virtualization, want 0", c, n)
		}
	}
}
