package vmm

import (
	"os"
	"runtime"
)

// procsFor is the GOMAXPROCS a VM of cpus vCPUs runs with: one P for each
// vCPU and two for the rest (device threads, the console, the watchdog),
// never fewer than the process has, and what the user set in GOMAXPROCS
// as it is.
//
// Why: a vCPU goroutine keeps its P through KVM_RUN (Go's entersyscall
// leaves the P in _Psyscall), and only its return or sysmon's retake, up
// to 10 ms later, frees it. With fewer Ps than vCPUs, a vCPU whose exit
// needs a P waits for another vCPU's KVM_RUN to end or for sysmon, a
// thread that has to be scheduled itself, so a busy guest's exits queue
// behind each other. With a P per vCPU every exit finds its own. Measured
// in the nested AMD-V host (2 L1 CPUs, so GOMAXPROCS was 2), storm.elf,
// x2APIC physical, two rounds alternating: 1024 vCPUs, 100,000 IPIs, the
// storm took 0.63-0.64 of its time with 1026 Ps; 4 vCPUs, 20,000 IPIs,
// 0.67-0.68 with 6. (An exit loop on one vCPU gained nothing from more Ps,
// docs/exit-cost.md: it never lacked one.) The OS scheduler still decides
// which thread runs; a P costs the runtime a few kilobytes, and the
// garbage collector's dedicated workers grow with GOMAXPROCS (a quarter of
// it) but only run during a cycle, which a VMM that hardly allocates
// seldom starts.
func procsFor(cpus int, now int, env string) int {
	if env != "" {
		return now
	}
	return max(now, cpus+2)
}

// raiseProcs applies procsFor to this process; it never lowers
// GOMAXPROCS, so VMs run one after another (tests) keep the largest.
func raiseProcs(cpus int) {
	now := runtime.GOMAXPROCS(0)
	if n := procsFor(cpus, now, os.Getenv("GOMAXPROCS")); n != now {
		runtime.GOMAXPROCS(n)
	}
}
