// This file holds HLT: the halted vCPU's wait for a wake-up, with its
// halt polling (package haltpoll).

package vcpu

import (
	"time"

	"github.com/govmm/govmm/vlapic"
)

// halt sleeps after HLT until an interrupt the guest can take (IF set),
// an NMI or an INIT arrives. It returns false when the VM ends. The wake
// check (look: TakePending) folds the AVIC backing page, and senders post
// before they notify, so a posted IPI always ends the sleep. Before the
// first sleep the thread polls for a wake-up for the window package
// haltpoll gives it, and tells the window how long the halt lasted.
func (v *VCPU) halt(ifFlag bool) bool {
	v.state.Store(uint32(StateHalted))
	defer v.state.Store(uint32(StateVMM))
	start := v.haltNow()
	p, woke := v.waitWake(ifFlag, start)
	v.poll.Done(time.Duration(v.haltNow()-start), woke)
	if woke {
		v.counts.Woke()
		v.exitFor(p.Fixed && ifFlag, p.Vector, vlapic.ExitHLT) // the HLT exit was the interrupt's
	}
	return woke
}

// waitWake is halt's wait: look, poll once, then sleep until woken and
// look again. It returns what woke it, or false when the VM ends.
func (v *VCPU) waitWake(ifFlag bool, start int64) (vlapic.Pending, bool) {
	polled, slept := false, false
	for {
		// A dump request wakes the vCPU too (RequestDump): served here,
		// with the registers of its last exit, this HLT's.
		v.maybeDump(v.runData)
		if v.maybePark(LoopHalted, ifFlag) != nil {
			return vlapic.Pending{}, false
		}
		p, e := v.enter()
		if p.Wakes(ifFlag) {
			if polled && !slept {
				v.counts.HaltPollHit()
			}
			return p, true
		}
		v.syncTimerTo(e.TimerAt, e.TimerArmed)
		if !polled {
			polled = true
			if v.pollWake(start) {
				continue
			}
		}
		slept = true
		v.wake.sleep()
		if v.stopped() {
			return vlapic.Pending{}, false
		}
	}
}

// pollWake spins until a wake-up signal comes or the poll window, counted
// from start, ends; it says whether one came (and takes it). Every wake-up
// arrives through the waker (Notify, after the sender set IRR or posted to
// the AVIC page; the LAPIC timer's host timer, which syncTimer armed, also
// notifies), so the spin reads the waker's word and the clock, and takes
// no lock a sender needs. Polls and their time are counted.
func (v *VCPU) pollWake(start int64) bool {
	win := v.poll.Poll()
	if win <= 0 {
		return false
	}
	t0 := v.haltNow()
	v.counts.HaltPollBegan() // after t0: whoever sees the poll counted sees it timed from before
	stop, now := start+int64(win), t0
	for !v.wake.pending() && now < stop {
		now = v.haltNow()
	}
	// The poll's end is now, not the loop's last clock read: a thread
	// descheduled between that read and the signal polled until now.
	now = v.haltNow()
	v.counts.HaltPollEnded(uint64(max(now-t0, 0)))
	return v.wake.take()
}

// haltNow is the halt's clock (Config.HaltClock): govmm's TSC clock read
// directly, inlined, or another clock through its interface.
func (v *VCPU) haltNow() int64 {
	if v.haltClock != nil {
		return v.haltClock.Now()
	}
	return v.haltTSC.Now()
}
