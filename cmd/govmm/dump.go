package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/govmm/govmm/vmm"
)

// dumpOnSIGUSR2 prints every vCPU's state and LAPIC to stderr whenever
// govmm receives SIGUSR2, until stop is closed.
func dumpOnSIGUSR2(vm *vmm.VM, stop <-chan struct{}) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ch:
				vm.Dump(os.Stderr)
			case <-stop:
				return
			}
		}
	}()
}
