package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/govmm/govmm/vmm"
)

// TestDumpNamesGuestCode: the SIGUSR2 dump (vm.Dump) of a running guest
// names each vCPU's RIP with the function of the guest's own symbol table
// that holds it, and finds return addresses on its stack. The storm guest
// runs long enough (a large count) to be dumped while it sends and
// receives IPIs, then is stopped.
func TestDumpNamesGuestCode(t *testing.T) {
	needKVM(t)
	img, err := os.ReadFile(filepath.Join(guestDir(t), "storm.elf"))
	if err != nil {
		t.Fatal(err)
	}
	var con, dump vmm.ConsoleLog
	vm, err := vmm.New(vmm.Config{CPUs: 2, Kernel: img, Console: &con, IOMMU: true, Cmdline: "mode=x2apic-phys count=100000000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	done := make(chan vmm.Result, 1)
	go func() { done <- vm.Run(5 * time.Minute) }()

	// Functions of storm.elf (guest/baremetal: storm.c, rt.c, apicmode.c).
	named := regexp.MustCompile(`(?m)^vCPU (\d): \S+ RIP 0x[0-9a-f]+ ([a-z_0-9]+)\+0x[0-9a-f]+ CPL 0 IF [01] exit \d+ \|`)
	stack := regexp.MustCompile(`(?m)^vCPU \d: stack [a-z_0-9]+\+0x[0-9a-f]+`)
	deadline := time.Now().Add(2 * time.Minute)
	seen := map[string]string{}
	for len(seen) < 2 || !stack.MatchString(dump.String()) {
		if time.Now().After(deadline) {
			vm.Stop("test")
			t.Fatalf("no named RIP of both vCPUs and a stack in the dumps:\n%s\nconsole:\n%s", dump.String(), con.String())
		}
		select {
		case r := <-done:
			t.Fatalf("the guest ended (%s, %v) before it was dumped:\n%s\nconsole:\n%s", r.How, r.Err, dump.String(), con.String())
		case <-time.After(500 * time.Millisecond):
		}
		vm.Dump(&dump)
		for _, m := range named.FindAllStringSubmatch(dump.String(), -1) {
			seen[m[1]] = m[2]
		}
	}
	vm.Stop("test")
	if r := <-done; r.How != "test" {
		t.Errorf("ended by %s (%v), want the test's stop", r.How, r.Err)
	}
	t.Logf("vCPU 0 in %s, vCPU 1 in %s; a stack: %s", seen["0"], seen["1"], stack.FindString(dump.String()))
}
