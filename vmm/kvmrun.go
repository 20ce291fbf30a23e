package vmm

import "fmt"

// KVMRun is how the vCPU loops with govmm's LAPIC enter the guest
// (--kvm-run): through Go's system-call path, or without it
// (vcpu.Config.RawRun).
type KVMRun int

const (
	// KVMRunAuto is raw while the VM has at most two vCPU threads per
	// host CPU (rawRunFor), through Go's system-call path beyond.
	KVMRunAuto KVMRun = iota
	// KVMRunSyscall enters with entersyscall and exitsyscall around
	// KVM_RUN: the goroutine's P can be taken while the guest runs, and
	// no host signal reaches the thread but the kick.
	KVMRunSyscall
	// KVMRunRaw enters with a raw system call (kvm.VCPU.RunRaw): an exit
	// costs what it costs a C VMM, but the goroutine counts as running
	// inside KVM_RUN, so Go's preemption signal is let through to end it
	// when the runtime needs the thread (a collection's stop-the-world).
	KVMRunRaw
)

// ParseKVMRun reads a --kvm-run value.
func ParseKVMRun(s string) (KVMRun, error) {
	switch s {
	case "auto", "":
		return KVMRunAuto, nil
	case "syscall":
		return KVMRunSyscall, nil
	case "raw":
		return KVMRunRaw, nil
	}
	return 0, fmt.Errorf("--kvm-run=%q: want auto, syscall or raw", s)
}

func (k KVMRun) String() string {
	switch k {
	case KVMRunAuto:
		return "auto"
	case KVMRunSyscall:
		return "syscall"
	case KVMRunRaw:
		return "raw"
	}
	return fmt.Sprintf("KVMRun(%d)", int(k))
}

// raw resolves the setting for a VM of cpus vCPUs on hostCPUs CPUs.
func (k KVMRun) raw(cpus, hostCPUs int) bool {
	switch k {
	case KVMRunRaw:
		return true
	case KVMRunSyscall:
		return false
	}
	return rawRunFor(cpus, hostCPUs)
}

// rawRunFor says whether auto enters raw: with at most two vCPU threads
// per host CPU. The raw KVM_RUN saves entersyscall and exitsyscall at
// every exit (docs/exit-cost.md), but the goroutine then counts as
// running inside KVM_RUN, so a stop-the-world must wait for every vCPU
// thread to be on a CPU and take Go's preemption signal: with many more
// threads than CPUs that is the scheduler's turn of each, where
// entersyscall lets the runtime take their Ps at once.
func rawRunFor(cpus, hostCPUs int) bool { return cpus <= 2*hostCPUs }
