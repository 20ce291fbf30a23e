// This file holds the vCPU goroutine's yield to Go's scheduler (it cedes
// its P): what keeps the runtime from taking the vCPU thread's P at every
// KVM_RUN once the loop has run for 10 ms without blocking. Every exit
// tests its clock, so the file is named to sort right after loop.go, and
// Go, which lays out a package's functions in the order of its files,
// puts that code beside the loop's, not on a page of its own after the
// rest (loop.go says why pages count); loop_direct.go likewise.

package vcpu

import (
	"runtime"

	"github.com/govmm/govmm/kvm"
)

// yieldIfDue reschedules the vCPU goroutine when it has gone yieldEvery
// cycles of the host's TSC (read with RDTSC: no system call, no clock
// read) since its last yield. A halt's sleep does not count: it is a
// futex wait, a system call to Go's scheduler like KVM_RUN, which leaves
// the goroutine on the same scheduling tick (when it was a channel
// receive, it did not: the goroutine parked and was scheduled anew; with
// the futex, a receiver that halts between IPIs was preempted by sysmon
// every 10 ms, its P taken in the middle of its sleep or its KVM_RUN).
//
// Why: Go's sysmon (runtime/proc.go, retake) treats a goroutine that has
// run on one scheduling tick for 10 ms (forcePreemptNS) as running too
// long, and whenever it then finds it in a system call it takes its P.
// A vCPU loop whose guest does not halt never blocks in Go, so from its
// first 10 ms on sysmon took the P during nearly every KVM_RUN, at its
// fastest period (each retake resets its back-off to 20 µs): each exit
// came back the slow way (another P, under the scheduler's lock) and each
// handed-off P woke a thread that spun before it slept. With the process
// on one CPU, as a pinned vCPU thread is, the vCPU thread and those threads
// took turns at every exit: bench-exits inside the nested AMD-V host
// measured govmm at 4.4-6.0x the floor VMM, 540,000 context switches
// per run; with this yield (then every 5 ms; 8 ms since issue 38),
// 1.26-1.39x and 19,000
// (docs/exit-cost.md). A yield of a locked goroutine costs two thread
// switches; one per 8 ms of a busy guest is little beside that.
func (v *VCPU) yieldIfDue() {
	if v.yieldEvery != 0 {
		v.yieldIfTime()
	}
}

// yieldIfTime is yieldIfDue's test of the clock, and the yield.
func (v *VCPU) yieldIfTime() {
	if v.tsc()-v.lastYield >= v.yieldEvery {
		yield()
		// The goroutine runs on a new scheduling tick from here, not from
		// when it asked to yield: on a host with many more vCPUs than Ps
		// the wait for a P can outlast yieldEvery, and counted from before
		// it every exit after the first yield yielded again (a 1024-vCPU
		// storm in the nested AMD-V host: 322 vCPU goroutines queued in
		// Gosched, one of them for 82 s).
		v.lastYield = v.tsc()
	}
}

// tsc is the host's TSC: RDTSC called directly, not through a function
// value, which would cost every exit two more pages (the variable's and
// the function value's: loop.go says why pages count); a test's clock
// (testTSC, which New copies) replaces it.
func (v *VCPU) tsc() uint64 {
	if v.testTSC != nil {
		return v.testTSC()
	}
	return kvm.RDTSC()
}

// testTSC is nil, or a test's TSC; yield is runtime.Gosched, replaced in
// tests.
var (
	testTSC func() uint64
	yield   = runtime.Gosched
)
