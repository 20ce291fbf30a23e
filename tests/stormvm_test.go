package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govmm/govmm/vmm"
)

// stormVM is storm.elf on 2 vCPUs (x2APIC physical, with the remapping
// unit) running in the background, for the tests that stop a guest in the
// middle of its IPIs (pause, snapshot, the control endpoint).
type stormVM struct {
	vm   *vmm.VM
	con  *vmm.ConsoleLog
	done chan vmm.Result // the run's result, once
	path string
}

// startStorm builds the storm of count IPIs (edit, if set, changes the
// configuration first), starts it, and returns once its storm has begun
// (its "cpus up" line).
func startStorm(t *testing.T, count int, edit func(*vmm.Config)) *stormVM {
	t.Helper()
	needKVM(t)
	s := &stormVM{con: &vmm.ConsoleLog{}, done: make(chan vmm.Result, 1), path: filepath.Join(guestDir(t), "storm.elf")}
	img, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := vmm.Config{CPUs: 2, Cmdline: fmt.Sprintf("mode=x2apic-phys count=%d", count), X2APIC: x2apicSetting(true), IOMMU: true,
		Kernel: img, KernelPath: s.path, Console: s.con}
	if edit != nil {
		edit(&cfg)
	}
	if s.vm, err = vmm.New(cfg); err != nil {
		t.Fatal(err)
	}
	// A test that ends early (a failed pause) stops the VM and waits for
	// its loop before closing it: Close under a running VM unmaps what
	// the loop still reads.
	ran := make(chan struct{})
	t.Cleanup(func() {
		s.vm.Stop("test ended")
		<-ran
		s.vm.Close()
	})
	go func() {
		defer close(ran)
		s.done <- s.vm.Run(5 * time.Minute)
	}()
	waitConsole(t, s.con, "cpus up", s.done)
	return s
}
