// This file holds the vCPU thread's signal mask: which signals may end
// KVM_RUN, and why it is the thread's own mask rather than KVM's.

package vcpu

import (
	"golang.org/x/sys/unix"
)

// loopSignalMask is the vCPU thread's signal mask for the whole of its
// loop, inside KVM_RUN and out: every signal blocked but the kick and the
// faults the thread itself raises. A signal that reached the thread inside
// KVM_RUN would end it with EINTR, an exit the guest did not cause, on the
// accounting of a guest that counts its own (TestHostSignalsCostNoExit):
// Go's preemption SIGURG, which sysmon sends to a goroutine that has run
// 10 ms, and any process signal the kernel may route here (SIGINT,
// SIGCHLD, SIGPROF), which the process's other threads take instead.
//
// The mask is the thread's, set once, rather than KVM's
// (KVM_SET_SIGNAL_MASK): with a KVM mask, every KVM_RUN swaps the
// thread's mask in and out (kvm_sigset_activate and _deactivate, each a
// sigprocmask under the signal lock: arch-independent virt/kvm/kvm_main.c),
// twice per exit, which a C VMM that blocks nothing does not pay.
//
// What blocking outside KVM_RUN costs: a SIGURG stays pending, so Go
// cannot preempt the loop asynchronously; it preempts it at the loop's
// next function call instead (every exit makes several), and the loop
// yields every VCPUYieldEvery anyway (loop_cede.go). Go's CPU profiler's
// SIGPROF is taken by other threads: vCPU threads are missing from a
// pprof profile (perf sees them). The faults stay unblocked: the kernel
// kills a process whose thread faults with its fault's signal blocked
// (force_sig_info_to_task), where Go would have turned a nil dereference
// into a panic with a trace.
//
// With RawRun (kvm.VCPU.RunRaw) Go's preemption signal SIGURG is let
// through as well: the goroutine then counts as running inside KVM_RUN,
// and a stop-the-world (a garbage collection's, a stack scan's) waits
// until the signal ends KVM_RUN and the loop reaches its next function
// call. A KVM_RUN it ends is counted apart (countKick), and such signals
// are few: sysmon sends one to a goroutine that has run 10 ms on one
// scheduling tick, which the loop's yield (every 8 ms of exits) leaves to
// a guest that runs 10 ms without an exit, and each collection sends one.
func loopSignalMask(raw bool) unix.Sigset_t {
	var s unix.Sigset_t
	s.Val[0] = ^uint64(0)
	// SIGKILL and SIGSTOP cannot be blocked: left out, the mask is the one
	// the thread then has.
	for _, sig := range []unix.Signal{kickSignal, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS, unix.SIGKILL, unix.SIGSTOP} {
		s.Val[0] &^= 1 << (sig - 1)
	}
	if raw {
		s.Val[0] &^= 1 << (unix.SIGURG - 1)
	}
	return s
}

// setThreadSignalMask sets the calling thread's mask to loopSignalMask and
// returns what restores the one it had (a thread that goes back to Go's
// pool must take Go's own mask with it).
func setThreadSignalMask(raw bool) (restore func(), err error) {
	set := loopSignalMask(raw)
	var old unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &set, &old); err != nil {
		return nil, err
	}
	return func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }, nil
}
