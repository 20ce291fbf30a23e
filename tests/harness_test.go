// Package tests runs govmm's bare-metal guests on the real /dev/kvm and
// checks what they report and what govmm counted.
package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vmm"
)

// guestDir is where the Makefile puts the guests (make guests).
func guestDir(t testing.TB) string {
	d := os.Getenv("GOVMM_GUEST_DIR")
	if d == "" {
		d = filepath.Join(cacheDir(), "guest")
	}
	if _, err := os.Stat(filepath.Join(d, "smp.elf")); err != nil {
		t.Fatalf("bare-metal guests not built in %s (run 'make guests'): %v", d, err)
	}
	return d
}

// cacheDir is the Makefile's build cache (GOVMM_CACHE, else ~/.cache/govmm).
func cacheDir() string {
	if d := os.Getenv("GOVMM_CACHE"); d != "" {
		return d
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".cache", "govmm")
}

// needKVM skips, loudly, when there is no usable /dev/kvm.
func needKVM(t testing.TB) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("SKIP: no usable /dev/kvm (%v): this test needs KVM", err)
	}
	f.Close()
}

// hostEmulates is vmm.HostEmulates for the tests of the paths govmm
// takes only on a host that interprets guest kernel code (kvm_pvm's). make
// test runs them on this machine's /dev/kvm when it is kvm_pvm's, with
// GOVMM_EXPECT_EMULATION=1: there a probe that finds no emulation fails
// them, instead of letting them skip or take the hardware branch.
func hostEmulates(t testing.TB) bool {
	t.Helper()
	if vmm.HostEmulates() {
		return true
	}
	if os.Getenv("GOVMM_EXPECT_EMULATION") == "1" {
		_, err := vmm.Host()
		t.Fatalf("GOVMM_EXPECT_EMULATION=1 (make test found kvm_pvm's /dev/kvm here), but govmm's probe finds a host that does not interpret guest kernel code (probe error: %v)", err)
	}
	return false
}

// guestRun is one finished guest.
type guestRun struct {
	Console string
	Status  int
	Report  accounting.Report
	KVM     map[string]uint64
}

// section returns measured section id of the run.
func (g *guestRun) section(t *testing.T, id int) accounting.SectionReport {
	t.Helper()
	for _, s := range g.Report.Sections {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("guest closed no section %d (sections: %d)\nconsole:\n%s", id, len(g.Report.Sections), g.Console)
	return accounting.SectionReport{}
}

// runGuest boots guest name with cpus vCPUs and the command line, and
// requires it to PASS (debug-exit status 1).
func runGuest(t *testing.T, name string, cpus int, x2apic bool, cmdline string) *guestRun {
	t.Helper()
	return runGuestWith(t, name, cpus, x2apic, cmdline, nil)
}

// runGuestWith is runGuest with a last say on the VM's configuration.
func runGuestWith(t *testing.T, name string, cpus int, x2apic bool, cmdline string, edit func(*vmm.Config)) *guestRun {
	t.Helper()
	return runGuestFor(t, name, cpus, x2apic, cmdline, edit, 5*time.Minute)
}

// runGuestFor is runGuestWith that stops the guest after timeout.
func runGuestFor(t *testing.T, name string, cpus int, x2apic bool, cmdline string, edit func(*vmm.Config), timeout time.Duration) *guestRun {
	t.Helper()
	cfg := vmm.Config{CPUs: cpus, Cmdline: cmdline, IOMMU: true, PVIPI: true, X2APIC: x2apicSetting(x2apic)}
	if edit != nil {
		edit(&cfg)
	}
	vm, res, console := runGuestRaw(t, name, cfg, timeout)
	g := &guestRun{Console: console, Status: res.Status, Report: vm.Accounting().Report()}
	g.KVM, _ = vm.KVMStats()
	if res.Err != nil {
		t.Fatalf("%s %q on %d vCPUs: %v\nconsole:\n%s%s", name, cmdline, cpus, res.Err, g.Console, endState(vm))
	}
	stem := strings.TrimSuffix(name, ".elf")
	if res.Status != 1 || !strings.Contains(g.Console, "PASS "+stem) {
		t.Fatalf("%s %q on %d vCPUs: status %d, want PASS (1)\nconsole:\n%s%s", name, cmdline, cpus, res.Status, g.Console, endState(vm))
	}
	if strings.Contains(g.Console, "FAIL") {
		t.Fatalf("%s reported a failure:\n%s", name, g.Console)
	}
	return g
}

// endStateCPUs bounds the vCPUs endState prints.
const endStateCPUs = 16

// endState is govmm's side of a guest that did not pass, as the VM ended:
// each vCPU's LAPIC (TPR, PPR, ISR, IRR) and last events, as the SIGUSR2
// dump prints them. Stop 34's CI lost ten IPIs in a storm and said only
// what the guest saw; the vectors left in IRR or ISR say where they
// stopped. With many vCPUs, vCPU 0, those with a vector left and those
// whose last exit was not a HLT (a test guest that failed waits with its
// CPUs halted; one that is not is what stop 36's 64-vCPU storm stall did
// not show) are printed, at most endStateCPUs.
func endState(vm *vmm.VM) string {
	var b strings.Builder
	// The exits by cause say what a guest that did not end was doing
	// (a timer it waited on, a port it polled).
	fmt.Fprintf(&b, "govmm's exits by cause: %v\n", vm.Accounting().Report().Total.ByCause)
	b.WriteString("govmm's vCPUs at the end:\n")
	n := 0
	for i, c := range vm.VCPUs() {
		if vm.APICs() == nil { // KVM's LAPIC (--lapic=kvm): only the vCPU's thread can read it
			if i < endStateCPUs {
				c.DumpNow(&b)
			}
			continue
		}
		st := vm.APICs().LAPIC(i).Snapshot()
		exit, _ := c.LastExit()
		if len(vm.VCPUs()) > endStateCPUs && i > 0 && st.IRR == [8]uint32{} && st.ISR == [8]uint32{} && exit == kvm.ExitHLT {
			continue
		}
		if n++; n > endStateCPUs {
			b.WriteString("(more vCPUs with vectors left not shown)\n")
			break
		}
		c.DumpNow(&b)
	}
	return b.String()
}

// runGuestRaw boots guest name with cfg (its kernel and console filled in)
// and returns how it ended and what it printed, judging nothing: for
// guests that must fail. The VM is closed when the test ends.
func runGuestRaw(t *testing.T, name string, cfg vmm.Config, timeout time.Duration) (*vmm.VM, vmm.Result, string) {
	t.Helper()
	needKVM(t)
	path := filepath.Join(guestDir(t), name)
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var con vmm.ConsoleLog
	cfg.Kernel, cfg.KernelPath, cfg.Console = img, path, &con
	vm, err := vmm.New(cfg)
	if err != nil {
		t.Fatalf("vmm.New: %v", err)
	}
	t.Cleanup(vm.Close)
	res := vm.Run(timeout)
	return vm, res, con.String()
}

// exits is a cause's count in a report.
func exits(r accounting.CPUReport, cause exitcause.Cause) uint64 {
	return r.ByCause[cause.String()]
}
