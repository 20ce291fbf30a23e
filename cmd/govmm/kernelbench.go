package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// kernelBench is one boot of govmm's guest kernel for a measurement its
// patches run before /init (govmm.ipibench, the seeds' experiments): the
// kernel command line asks for it, the kernel prints its results, govmm's
// accounting counts its sections' exits, and at the shell it powers off.
type kernelBench struct {
	mode               linuxguest.Mode
	cpus               int
	pvIPI, pvEOI, avic bool
	lapic              vmm.LAPICKind // whose LAPIC (--lapic): govmm's or KVM's
	cmdline            string        // the measurement's parameters
	disk               string        // a virtio-blk image, if any
	shell              []string      // commands for the u-root shell and their expected output (linuxguest.ShellCommands)
}

// kernelImages are govmm's guest kernel and initramfs, read once.
type kernelImages struct{ kernel, initrd []byte }

// loadKernelImages reads the kernel 'make kernel' builds, with a clear
// error when it is not there.
func loadKernelImages() (kernelImages, error) {
	img, err := os.ReadFile(filepath.Join(cacheDir(), "linux", "vmlinux"))
	if err != nil {
		return kernelImages{}, fmt.Errorf("govmm's guest kernel is not built (%v): run 'make kernel'", err)
	}
	rd, _ := os.ReadFile(filepath.Join(cacheDir(), "initramfs.cpio"))
	return kernelImages{img, rd}, nil
}

// benchMemSize is the guest's memory: 512 MiB, and 1 GiB above 128 vCPUs,
// whose per-CPU areas and kernel stacks the smaller size leaves too little
// room beside the initramfs (boot-big's 288 vCPUs run in 1 GiB).
func benchMemSize(cpus int) uint64 {
	if cpus > 128 {
		return 1 << 30
	}
	return 512 << 20
}

// run boots the kernel, checks that the boot is the one asked for (the
// APIC mode, every CPU online, the PV send-IPI in use), and returns the
// kernel's log and the accounting's sections.
func (b kernelBench) run(im kernelImages, timeout time.Duration) (string, []accounting.Section, error) {
	cfg := linuxguest.ModeConfig(b.mode, b.cpus, true, b.pvIPI, b.cmdline)
	con := linuxguest.NewConsole(nil, linuxguest.BootMilestones)
	script, err := linuxguest.NewConsoleScript(con, linuxguest.ShellCommands(b.shell...)...)
	if err != nil {
		return "", nil, err
	}
	defer script.Close()
	cfg.Kernel, cfg.Initrd, cfg.Console, cfg.MemSize, cfg.PVEOI, cfg.AVIC = im.kernel, im.initrd, con, benchMemSize(b.cpus), b.pvEOI, b.avic
	cfg.ConsoleInput, cfg.LAPIC = script, b.lapic
	if b.disk != "" {
		cfg.Disk = vmm.Disk{Path: b.disk}
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return "", nil, err
	}
	defer vm.Close()
	res := vm.Run(timeout)
	log := con.Log()
	if err := linuxguest.ParseLog(log).Verify(b.mode, b.cpus, linuxguest.WantPVIPI(cfg, true)); err != nil {
		return log, nil, fmt.Errorf("%v (ended by %s: %v)", err, res.How, res.Err)
	}
	return log, vm.Accounting().Sections(), nil
}
