package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// addHostFlags adds the flags that force what govmm otherwise decides from
// the host probe (govmm host): --syscall-doorbell and --tsc-deadline; and
// --halt-poll, the bound on halt polling (vmm.Config.HaltPoll); and
// --cpu-affinity, where the vCPU threads run (vmm.Config.CPUAffinity); and
// --kvm-run, how they enter the guest (vmm.Config.KVMRun). The
// returned func sets them in cfg after parsing.
func addHostFlags(fs *flag.FlagSet) func(cfg *vmm.Config) error {
	db := fs.String("syscall-doorbell", "auto",
		"govmm's SYSCALL doorbell for guest user space (package pvsyscall): auto (only where this host's KVM gets SYSCALL wrong), on or off")
	tsc := fs.String("tsc-deadline", "auto",
		"advertise TSC-deadline mode: auto (only where a guest's TSC_DEADLINE writes reach govmm), on or off")
	poll := fs.Duration("halt-poll", vmm.DefaultHaltPoll,
		"longest a halted vCPU's thread polls for a wake-up before it sleeps, adapting per vCPU as KVM's halt polling does; 0 turns it off (it is off anyway with more vCPUs than host CPUs)")
	kvmRun := addKVMRunFlag(fs)
	affinity := fs.String("cpu-affinity", "",
		"pin vCPU i's thread to host CPU LIST[i mod its length] (comma-separated host CPUs, e.g. 0,1), as production VMMs pin theirs; empty: the kernel places them")
	return func(cfg *vmm.Config) error {
		var err error
		if cfg.CPUAffinity, err = parseCPUList("--cpu-affinity", *affinity); err != nil {
			return err
		}
		if *poll < 0 {
			return fmt.Errorf("--halt-poll=%v: want a duration of 0 (off) or more", *poll)
		}
		cfg.HaltPoll = *poll
		if cfg.KVMRun, err = kvmRun(); err != nil {
			return err
		}
		if cfg.SyscallDoorbell, err = vmm.ParseDoorbell(*db); err != nil {
			return err
		}
		cfg.TSCDeadline, err = hostprobe.ParseSetting("--tsc-deadline", *tsc)
		return err
	}
}

// parseCPUList reads a comma-separated list of host CPUs ("" is none),
// checked against this process's CPUs (vmm.CheckAffinity).
func parseCPUList(flagName, s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s=%s: %q is not a host CPU number", flagName, s, f)
		}
		cpus = append(cpus, n)
	}
	return cpus, vmm.CheckAffinity(cpus)
}

// addKVMRunFlag adds --kvm-run (vmm.Config.KVMRun); the returned func
// reads it after parsing.
func addKVMRunFlag(fs *flag.FlagSet) func() (vmm.KVMRun, error) {
	s := fs.String("kvm-run", "auto",
		"how vCPUs with govmm's LAPIC enter the guest: syscall (through Go's system-call path: the runtime may take the thread's P while the guest runs), "+
			"raw (no entersyscall: an exit costs what it costs a C VMM; Go's preemption signal may end KVM_RUN, counted as host_signals, never as an exit) "+
			"or auto (raw up to two vCPUs per host CPU)")
	return func() (vmm.KVMRun, error) { return vmm.ParseKVMRun(*s) }
}
