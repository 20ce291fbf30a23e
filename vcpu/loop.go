// This file holds the run loop itself: KVM_RUN, what every return from it
// leaves behind, and the loop's end.
//
// The loop's files are loop*.go (and kick.go just before them): Go lays
// out a package's functions in the order of its files, so named to sort
// together, the code an exit runs sits on a few pages instead of being
// spread among the package's cold code (dumps, hand-over, snapshots). In
// the nested AMD-V host each page the VMM touches between two entries
// costs the exit about 500 cycles (QEMU's TCG flushes its software TLB at
// each world switch; 64 pages touched per exit by the Go floor added
// 20-35% to its exit, docs/exit-cost.md). TestLoopCodeLayout keeps it so.

package vcpu

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/kvm"
)

// Run is the vCPU loop. It returns nil when the VM ends (Done closed) and an
// *Error when this vCPU cannot go on.
func (v *VCPU) Run() error {
	runtime.LockOSThread()
	// A pinned thread must not go back to Go's pool of threads when the
	// loop ends (another goroutine, or another VM's vCPU, would run
	// pinned there): a goroutine that ends locked takes its thread with
	// it. Threads Go starts meanwhile are not cloned from this one (the
	// runtime starts them from its template thread for a locked M).
	v.tid.Store(int32(unix.Gettid()))
	if v.hostCPU < 0 {
		defer runtime.UnlockOSThread()
	} else {
		var set unix.CPUSet
		set.Set(v.hostCPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return &Error{v.id, fmt.Errorf("pinning the vCPU thread to host CPU %d: %w", v.hostCPU, err)}
		}
	}
	defer v.maybeDump(nil) // a request that came as the loop ended (see RequestDump)
	defer v.failParkOnStop()
	defer v.state.Store(uint32(StateStopped))
	defer v.timer.Stop()
	defer func() { // a kick the VM's end brought, before any entry counted it
		if (v.kicked || v.signalled) && v.lapic != nil {
			v.countKick(v.look())
		}
	}()

	// Only the kick may interrupt KVM_RUN (sigmask.go). Restored before
	// the thread is unlocked (deferred after UnlockOSThread above).
	restoreMask, err := setThreadSignalMask(v.rawRun)
	if err != nil {
		return &Error{v.id, fmt.Errorf("blocking host signals on the vCPU thread: %w", err)}
	}
	defer restoreMask()
	run := v.kvm.RunData()
	// KVM stores the general registers in kvm_run at every exit; the
	// segment and control registers only when a handler asks (sregs): on
	// VMX storing them costs a dozen VMCS reads that most exits never use.
	run.ValidRegs = kvm.SyncRegsGPR
	if v.resume != nil {
		if err := v.resumeSaved(*v.resume); errors.Is(err, errStop) {
			return nil
		} else if err != nil {
			return &Error{v.id, err}
		}
	} else if v.boot != nil {
		if err := v.boot.apply(v.kvm); err != nil {
			return &Error{v.id, err}
		}
	}
	if v.inKernel != nil {
		return v.runInKernel(run)
	}
	if v.boot == nil && v.resume == nil {
		if err := v.waitSIPI(); errors.Is(err, errStop) {
			return nil
		} else if err != nil {
			return &Error{v.id, err}
		}
	}
	for {
		if v.stopped() {
			return nil
		}
		if v.parkReq.Load() != nil { // maybePark's test, inlined: every exit asks
			if err := v.maybePark(LoopRunning, false); errors.Is(err, errStop) {
				return nil
			} else if err != nil {
				return &Error{v.id, err}
			}
		}
		v.yieldIfDue()
		v.enterGuestState()
		if !v.quietEntry(run) {
			if err := v.prepareEntry(); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return &Error{v.id, err}
			}
		}
		err := v.run()
		v.state.Store(uint32(StateVMM))
		v.afterRun(err)
		v.syncCR8(run)
		v.maybeDump(run)
		if err != nil {
			if endedWithoutExit(err) {
				v.log.add(evKick, 0, run.Sync.Regs.RIP)
				v.endedBy() // counted by the next entry's look (countKick)
				continue
			}
			return &Error{v.id, fmt.Errorf("KVM_RUN: %w", err)}
		}
		err = v.handleExit(run)
		v.exits.End() // the window an exit's count opened (exitcause.Tally), if one did
		if err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return &Error{v.id, err}
		}
	}
}

// enterGuestState marks the vCPU as in the guest, then looks for a park
// request made while it was not: Notify kicks only a vCPU in the guest
// (and wakes a halted one), so a request made between the loop's parking
// point and here would otherwise wait for the guest's next exit of its
// own, forever in a guest that makes none (the control endpoint's pause
// right after a resume once did). KVM_RUN then returns at once
// (immediate_exit) and the loop parks at its next parking point.
// Small enough to be inlined into the loop (its slow path is parkSoon).
func (v *VCPU) enterGuestState() {
	v.state.Store(uint32(StateGuest))
	if v.parkReq.Load() != nil {
		v.parkSoon()
	}
}

// run is one KVM_RUN: with RawRun, without entersyscall
// (kvm.VCPU.RunRaw: every HLT exits to this loop, so KVM_RUN never sleeps
// in the kernel, and Go's preemption signal may end it: sigmask.go).
func (v *VCPU) run() error {
	if v.rawRun {
		return v.hwRunRaw()
	}
	return v.hwRun()
}

// endedWithoutExit says whether KVM_RUN's error is no exit of the guest's:
// EINTR, the kick signal or immediate_exit ended it; EAGAIN, KVM asked to
// be called again. Either way the loop looks at the LAPIC and goes on.
func endedWithoutExit(err error) bool {
	// KVM_RUN's error is a bare errno (kvm.VCPU.Run, RunRaw): asserted,
	// it is one compare, where errors.Is compares interfaces in the
	// runtime (ifaceeq, its type data: seven pages in a kicked entry's
	// step, scripts/rtt-pages.sh). A wrapped one (a test's fake) is
	// unwrapped.
	if e, ok := err.(unix.Errno); ok {
		return e == unix.EINTR || e == unix.EAGAIN
	}
	return errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN)
}

// errStop ends the loop quietly (the VM is ending).
var errStop = errors.New("stop")

// stopped says whether the VM has ended. It is one atomic load, where a
// receive from Done with a default (a select) cost 90 instructions, and
// the loop asks twice per exit (at its top and after each handler):
// ended is set before the Notify that follows the VM's end (Stop, or the
// watcher New starts on Done), and the entry after a Notify looks at it
// (prepareEntry), so a vCPU about to enter sees the end there or is
// kicked out of the guest.
func (v *VCPU) stopped() bool { return v.ended.Load() }

// Stop tells the vCPU the VM has ended (Done is closed) and kicks or
// wakes it: its loop returns at its next look. vmm calls it on every
// vCPU as it ends the VM; the watcher New starts on Done does the same
// for a VM that only closes Done.
func (v *VCPU) Stop() {
	v.ended.Store(true)
	v.Notify()
	v.wakeUp()
}

// syncCR8 takes a TPR the guest changed with MOV CR8 into the LAPIC.
func (v *VCPU) syncCR8(run *kvm.Run) {
	if v.lapic == nil {
		return
	}
	if run.CR8 != v.cr8 {
		v.lapic.SetCR8(run.CR8)
		v.cr8 = run.CR8
	}
}

// afterRun is what every return from KVM_RUN leaves behind: the sregs
// read belong to the entry that ended, and the kick is cleared, in this
// order, and immediate_exit always: a Notify that won its CAS before the
// Store may set immediate_exit after we looked, which must cost at most
// one spurious exit, never leave immediate_exit set with no kick pending
// (every later KVM_RUN would return at once and the guest would never run
// again).
//
// The exception queued was delivered only if the guest ran: a KVM_RUN that
// ended without an exit (err: the kick, immediate_exit) may have returned
// before entering, with the exception still pending in KVM, which then
// reports ready_for_interrupt_injection all the same (its
// kvm_event_needs_reinjection ignores pending exceptions), and a vector
// injected beside it would be dropped (interruptAllowed). So only a real
// exit clears it; after a kick that came once the guest ran, it costs one
// interrupt window at most (TestGPThenKick).
func (v *VCPU) afterRun(err error) {
	if err == nil {
		v.exceptionQueued = false
	}
	v.sregsFresh = false
	v.kickPending.Store(false)
	v.hwSetImmediateExit(false)
}

// sregs returns this exit's segment and control registers, read from KVM
// (KVM_GET_SREGS) into run.Sync.Sregs on first use. A handler that edits
// them marks kvm.SyncRegsSregs dirty, and the next KVM_RUN loads them.
func (v *VCPU) sregs() (*kvm.Sregs, error) {
	run := v.runData
	if !v.sregsFresh {
		s, err := v.kvm.Sregs()
		if err != nil {
			return nil, err
		}
		run.Sync.Sregs, v.sregsFresh = s, true
	}
	return &run.Sync.Sregs, nil
}
