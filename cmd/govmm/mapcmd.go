package main

import (
	"fmt"
	"io"

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
	asJSON := addJSONFlag(fs, "the map")
	disk := &vmm.Disk{}
	fs.Func("disk", "as run's --disk: a virtio-blk device (its BARs are in the PCI window)",
		func(s string) (err error) { *disk, err = vmm.ParseDisk(s); return err })
	virtioConsole := fs.Bool("virtio-console", false, "as run's --virtio-console")
	kvmPath := addKVMFlag(fs)
	hostFlags := addHostFlags(fs)
	pos, rest, err := parseArgs(fs, args, "")
	if err != nil {
		return 0, err
	}
	if pos = append(pos, rest...); len(pos) != 1 {
		return 0, usageErr("map", "needs one KERNEL image")
	}
	cfg := vmm.Config{CPUs: *cpus, KernelPath: pos[0], Console: io.Discard, IOMMU: *iommu,
		Disk: *disk, VirtioConsole: *virtioConsole, KVMPath: *kvmPath}
	pvf.apply(&cfg)
	if !x2.advertised() {
		cfg.X2APIC = vmm.X2APICOff
	}
	if err := checkDisk(disk.Path); err != nil {
		return 0, err
	}
	if err := asJSON.check(); err != nil {
		return 0, err
	}
	if err := hostFlags(&cfg); err != nil {
		return 0, err
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if cfg.Kernel, err = readKernel(pos[0]); err != nil {
		return 0, err
	}
	useKVM(*kvmPath)
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	if asJSON.on {
		return 0, asJSON.write(stdout, vm.Map())
	}
	for _, e := range vm.Map() {
		fmt.Fprintln(stdout, e)
	}
	return 0, nil
}
