package main

import (
	"flag"

	"github.com/govmm/govmm/vmm"
)

// addDoorbellFlag adds --syscall-doorbell to a command; the returned func
// reads it after parsing.
func addDoorbellFlag(fs *flag.FlagSet) func() (vmm.Doorbell, error) {
	s := fs.String("syscall-doorbell", "auto",
		"govmm's SYSCALL doorbell for guest user space (package pvsyscall): auto (only where this host's KVM gets SYSCALL wrong), on or off")
	return func() (vmm.Doorbell, error) { return vmm.ParseDoorbell(*s) }
}
