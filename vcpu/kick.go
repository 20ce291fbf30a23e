// This file holds the kick protocol: Notify from any thread, the kick
// signal that ends KVM_RUN, and whether a kick brought work.

package vcpu

import (
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/vlapic"
)

// kickSignal interrupts KVM_RUN on a vCPU thread. It needs a handler (the
// default action kills the process) that is not SIG_IGN (an ignored signal
// never interrupts KVM_RUN): Go's runtime installs its own for SIGUSR1 at
// start-up, and as long as no one asked for the signal with os/signal's
// Notify, that handler returns at once for a signal sent with tgkill
// (runtime/signal_unix.go, sighandler: not wanted by sigsend, not ignored,
// neither _SigKill nor _SigThrow). Notify must not be used: each kick would
// then also wake os/signal's goroutine on another thread to hand the
// signal to a channel nobody reads, a thread wake-up per IPI to a running
// vCPU. Reset undoes a Notify or Ignore of it anywhere in the process.
const kickSignal = unix.SIGUSR1

var kickOnce sync.Once

func installKickHandler() {
	kickOnce.Do(func() {
		signal.Reset(kickSignal)
	})
}

// Notify tells the vCPU that its LAPIC has something new to deliver. It is
// called from any thread (vlapic.Sink) and never blocks:
//   - in the guest: set immediate_exit and signal the thread, once per entry
//     (kickPending), so a storm of IPIs costs one exit;
//   - halted or waiting for SIPI: wake the sleeping thread (no exit at all);
//   - in govmm: nothing, the loop looks at the LAPIC before it enters.
//
// The loop publishes StateGuest before its last look at the LAPIC and
// delivery sets IRR before calling Notify, so one of the two always sees
// the other. With AVIC-style delivery (vlapic.Options.AVIC) the sender sets
// a bit of the target's IRR backing page with an atomic OR instead, and
// that last look (look in prepareEntry; in halt, the wake check)
// folds the page into IRR with atomic swaps: Go's atomics are sequentially
// consistent, so the same argument holds and no IPI is lost. Notify is then
// AVIC's doorbell: KicksSent counts it per target vCPU; a halted vCPU is
// woken with neither signal nor exit.
func (v *VCPU) Notify() {
	v.notified.Store(true) // before the state is read: see quietEntry
	switch State(v.state.Load()) {
	case StateGuest:
		if v.kickPending.CompareAndSwap(false, true) {
			v.kicksSent.Add(1)
			v.hwSetImmediateExit(true)
			if tid := v.tid.Load(); tid != 0 {
				v.kick(int(tid))
			}
			v.counts.KickSent()
		}
	case StateHalted, StateWaitSIPI:
		v.wakeUp()
	}
}

// Set is a VM's vCPUs by index: the LAPICs' vlapic.Sink, which turns
// "this LAPIC has something new" into that vCPU's kick or wake-up.
type Set []*VCPU

// Notify is vCPU cpu's Notify.
//
// Its receiver is a pointer: with a value one, a Set in the LAPICs' Sink
// is called through a wrapper the compiler places after the package's
// code, one more page per IPI (loop.go says why pages count).
func (s *Set) Notify(cpu int) { (*s)[cpu].Notify() }

// kick signals the vCPU thread. tgkill fails with EAGAIN when the kernel
// is short of signal queue entries for a moment: then it is tried again, a
// bounded number of times (Notify must not block). Any other failure is
// counted (KicksFailed): immediate_exit is set, so the target still exits
// at its next KVM_RUN, but a vCPU already in the guest runs blind until
// its next exit of its own.
func (v *VCPU) kick(tid int) {
	for range kickTries {
		err := v.tgkill(tid)
		if err == nil {
			return
		}
		if err != unix.EAGAIN {
			break
		}
	}
	v.counts.KickFailed()
}

const kickTries = 100

// tgkill sends the kick signal with tgkill(2) without entersyscall (it
// never sleeps: the kick's sender pays it at every kick), called directly
// rather than through a function variable (two more pages per kick:
// loop.go says why pages count), unless a test's is set.
func (v *VCPU) tgkill(tid int) error {
	if v.testTgkill != nil {
		return v.testTgkill(v.pid, tid, kickSignal)
	}
	if e := tgkillRaw(uintptr(v.pid), uintptr(tid), uintptr(kickSignal)); e != 0 {
		return unix.Errno(e)
	}
	return nil
}

// wakeUp wakes the halted vCPU. Kept a call, not inlined: the page tools
// (scripts/rtt-pages.sh, rtt-pages-dump.py) tell a sender's step that
// woke its target by this function's entry.
//
//go:noinline
func (v *VCPU) wakeUp() { v.wake.wake() }

// countKick counts the kicked exit whose KVM_RUN just ended, if any, from
// p, what the entry after it found (enter: the same look at the LAPIC that
// decides the injection, so a kick costs no lock round trip of its own).
// It tells a kick that brought work (an interrupt, NMI, INIT or SIPI to
// act on, or the VM's end) from one that raced an exit and found nothing:
// the kick protocol can cost at most one such spurious exit. The look
// completes a PV EOI the guest has done first: until then its vector still
// holds PPR up and would hide the new one.
//
// With RawRun, Go's preemption signal may also end KVM_RUN (signalled).
// If the look after it finds work, the signal only came first: the work
// was posted while the guest ran (its sender saw StateGuest and kicked,
// or kicks as this look runs) or while the loop was out for the signal,
// and either way a guest with no signal would have taken it through one
// kick exit. So it is counted as that kick, and the exit counts are those
// of a host without Go's signal (TestIPIExitCounts' spinning receivers
// take one kick exit per interrupt). A late kick's immediate_exit then
// costs one spurious exit at most, as a kick racing any exit does. If
// the look finds nothing, the signal was no exit of the guest's: counted
// apart (HostSignal), never as one.
func (v *VCPU) countKick(p vlapic.Pending) {
	if !v.kicked && !v.signalled {
		return
	}
	kicked := v.kicked
	v.kicked, v.signalled = false, false
	switch {
	case p.Work() || v.stopped():
		v.exits.Begin(exitcause.Kick) // read with its charge (exitFor)
		v.exitFor(p.Fixed, p.Vector, vlapic.ExitKick)
		v.exits.End()
	case kicked:
		v.exits.Count(exitcause.KickSpurious)
	default:
		v.counts.HostSignal()
	}
}

// endedBy records why a KVM_RUN ended without an exit (EINTR), for the
// next entry's look (countKick). Without RawRun only the kick can end it
// (every other signal is blocked on the thread: sigmask.go). With it, Go's
// SIGURG can too: a kick was sent since the last such return, or it was
// the host's signal. A kick ends KVM_RUN by immediate_exit or by its
// signal; where both land, in two KVM_RUNs, the second is taken for the
// host's (no kick sent since the first).
func (v *VCPU) endedBy() {
	if !v.rawRun {
		v.kicked = true
		return
	}
	if k := v.kicksSent.Load(); k != v.kicksTaken {
		v.kicksTaken, v.kicked = k, true
		return
	}
	v.signalled = true
}
