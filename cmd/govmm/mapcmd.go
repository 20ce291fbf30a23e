package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/vmm"
)

// cmdMap builds a VM as run would (the kernel loaded, nothing run) and
// prints its exit bus: every PIO, MMIO and MSR range govmm serves, what
// claims it, and which MSRs the MSR filter takes from KVM.
func cmdMap(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("map", "usage: govmm map [flags] KERNEL", "", stderr)
	cpus := fs.Int("cpus", 1, "number of vCPUs")
	x2 := addX2APICFlag(fs, "cluster", "as run's --x2apic: off hides x2APIC from CPUID, physical, cluster and mixed advertise it")
	iommu := fs.Bool("iommu", true, "add the VT-d interrupt-remapping unit")
	pvf := addPVFlags(fs, pvipi.Flag)
	asJSON := fs.Bool("json", false, "print the map as JSON")
	disk := &vmm.Disk{}
	fs.Func("disk", "as run's --disk: a virtio-blk device (its BARs are in the PCI window)",
		func(s string) (err error) { *disk, err = vmm.ParseDisk(s); return err })
	virtioConsole := fs.Bool("virtio-console", false, "as run's --virtio-console")
	hostFlags := addHostFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return 0, err
	}
	if fs.NArg() != 1 {
		return 0, usageErr("map", "needs one KERNEL image")
	}
	cfg := vmm.Config{CPUs: *cpus, KernelPath: fs.Arg(0), Console: io.Discard, IOMMU: *iommu,
		Disk: *disk, VirtioConsole: *virtioConsole}
	pvf.apply(&cfg)
	if !x2.advertised() {
		cfg.X2APIC = vmm.X2APICOff
	}
	if err := hostFlags(&cfg); err != nil {
		return 0, err
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	var err error
	if cfg.Kernel, err = os.ReadFile(fs.Arg(0)); err != nil {
		return 0, fmt.Errorf("cannot read kernel image: %w", err)
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return 0, enc.Encode(vm.Map())
	}
	for _, e := range vm.Map() {
		fmt.Fprintln(stdout, e)
	}
	return 0, nil
}
