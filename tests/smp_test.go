package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

var cpuCounts = []int{1, 2, 4, 64}

// TestSMPBringUp starts every AP with one INIT and one SIPI broadcast
// (all-excluding-self) and checks each one arrived with its own APIC ID.
func TestSMPBringUp(t *testing.T) {
	for _, n := range cpuCounts {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g := runGuest(t, "smp.elf", n, false, "")
			bsp := g.Report.CPUs[0]
			want := uint64(0)
			if n > 1 {
				want = 2 // INIT + SIPI, each one ICR write to all-excluding-self
			}
			if got := exits(bsp, exitcause.APIC(false, true, 0x30)); got != want {
				t.Errorf("BSP ICR writes = %d, want %d", got, want)
			}
			if got := bsp.IPIDelivered["all_excluding_self"]; got != uint64(2*(n-1)) {
				t.Errorf("INIT/SIPI deliveries = %d, want %d", got, 2*(n-1))
			}
			for _, c := range g.Report.CPUs[1:] {
				if c.Wakeups < 1 {
					t.Errorf("AP %d never left wait-for-SIPI", c.CPU)
				}
			}
			checkKVMAgrees(t, g)
		})
	}
}

// checkKVMAgrees compares govmm's counts with KVM's own statistics where
// KVM keeps one that means the same thing on this host.
func checkKVMAgrees(t *testing.T, g *guestRun) {
	t.Helper()
	if g.KVM == nil {
		t.Fatal("no KVM statistics (KVM_GET_STATS_FD)")
	}
	var mmio uint64
	for name, n := range g.Report.Total.ByCause {
		if len(name) > 5 && name[:5] == "mmio_" {
			mmio += n
		}
	}
	if k := g.KVM["mmio_exits"]; k != mmio {
		t.Errorf("KVM counted %d MMIO exits, govmm %d", k, mmio)
	}
	if k, ok := g.KVM["halt_exits"]; ok && k != exits(g.Report.Total, exitcause.HLT) {
		t.Errorf("KVM counted %d HLT exits, govmm %d", k, exits(g.Report.Total, exitcause.HLT))
	}
	if k := g.KVM["exits"]; k < g.Report.Total.Exits-exits(g.Report.Total, exitcause.Kick) {
		t.Errorf("KVM counted %d exits in all, fewer than govmm's %d user-space exits", k, g.Report.Total.Exits)
	}
}

// TestMultibootCommandLine: a Multiboot kernel's command line is built as
// QEMU builds it, the image's path first (the runtime prints that first
// word), then the arguments, which every guest taking parameters still
// finds (e.g. TestNoInterruptLostToMSRFault's count=).
func TestMultibootCommandLine(t *testing.T) {
	g := runGuest(t, "smp.elf", 1, false, "a=1 b=2")
	want := "cmdline='" + filepath.Join(guestDir(t), "smp.elf") + "'"
	if !strings.Contains(g.Console, want) {
		t.Errorf("console lacks %q:\n%s", want, g.Console)
	}
}

// TestAPICBase: CPUID.1:EDX.APIC reads 0 while the guest has its APIC
// disabled (KVM answers CPUID from its own copy of APIC_BASE, which govmm
// keeps up to date), and address bits at MAXPHYADDR and above are reserved.
func TestAPICBase(t *testing.T) {
	for _, x2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("x2apic=%v", x2), func(t *testing.T) { runGuest(t, "apicbase.elf", 1, x2, "") })
	}
}
