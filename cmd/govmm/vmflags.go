package main

import (
	"flag"

	"github.com/govmm/govmm/vmm"
)

// vmFlags are the flags run and boot share: the dashboard, dumps and
// symbols (dashFlags), the host probe's overrides, and the console input.
type vmFlags struct {
	dash      dashFlags
	hostFlags func(*vmm.Config) error
	conIn     consoleFlag
	// disk is --disk: the virtio-blk image (no Path: none).
	disk    *vmm.Disk
	sandbox sandboxFlags
}

func addVMFlags(fs *flag.FlagSet) vmFlags {
	disk := &vmm.Disk{}
	fs.Func("disk", "a raw disk image for a virtio-blk device with one queue per vCPU: FILE, FILE,ro (read-only) or FILE,rw",
		func(s string) (err error) { *disk, err = vmm.ParseDisk(s); return err })
	return vmFlags{dash: addDashFlags(fs), hostFlags: addHostFlags(fs), conIn: addConsoleFlag(fs), disk: disk,
		sandbox: addSandboxFlags(fs)}
}
