package main

import (
	"flag"
	"fmt"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// addHostFlags adds the flags that force what govmm otherwise decides from
// the host probe (govmm host): --syscall-doorbell and --tsc-deadline; and
// --halt-poll, the bound on halt polling (vmm.Config.HaltPoll). The
// returned func sets them in cfg after parsing.
func addHostFlags(fs *flag.FlagSet) func(cfg *vmm.Config) error {
	db := fs.String("syscall-doorbell", "auto",
		"govmm's SYSCALL doorbell for guest user space (package pvsyscall): auto (only where this host's KVM gets SYSCALL wrong), on or off")
	tsc := fs.String("tsc-deadline", "auto",
		"advertise TSC-deadline mode: auto (only where a guest's TSC_DEADLINE writes reach govmm), on or off")
	poll := fs.Duration("halt-poll", vmm.DefaultHaltPoll,
		"longest a halted vCPU's thread polls for a wake-up before it sleeps, adapting per vCPU as KVM's halt polling does; 0 turns it off (it is off anyway with more vCPUs than host CPUs)")
	return func(cfg *vmm.Config) error {
		if *poll < 0 {
			return fmt.Errorf("--halt-poll=%v: want a duration of 0 (off) or more", *poll)
		}
		cfg.HaltPoll = *poll
		var err error
		if cfg.SyscallDoorbell, err = vmm.ParseDoorbell(*db); err != nil {
			return err
		}
		cfg.TSCDeadline, err = hostprobe.ParseSetting("--tsc-deadline", *tsc)
		return err
	}
}
