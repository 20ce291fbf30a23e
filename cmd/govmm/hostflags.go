package main

import (
	"flag"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// addHostFlags adds the flags that force what govmm otherwise decides from
// the host probe (govmm host): --syscall-doorbell and --tsc-deadline. The
// returned func sets them in cfg after parsing.
func addHostFlags(fs *flag.FlagSet) func(cfg *vmm.Config) error {
	db := fs.String("syscall-doorbell", "auto",
		"govmm's SYSCALL doorbell for guest user space (package pvsyscall): auto (only where this host's KVM gets SYSCALL wrong), on or off")
	tsc := fs.String("tsc-deadline", "auto",
		"advertise TSC-deadline mode: auto (only where a guest's TSC_DEADLINE writes reach govmm), on or off")
	return func(cfg *vmm.Config) error {
		var err error
		if cfg.SyscallDoorbell, err = vmm.ParseDoorbell(*db); err != nil {
			return err
		}
		cfg.TSCDeadline, err = hostprobe.ParseSetting("--tsc-deadline", *tsc)
		return err
	}
}
