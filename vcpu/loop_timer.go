// This file holds the LAPIC timer's host side: a Go timer aimed at the
// LAPIC timer's next deadline, which raises the vector and kicks the vCPU.

package vcpu

import "time"

// syncTimer keeps the host timer aimed at the LAPIC timer's next deadline.
func (v *VCPU) syncTimer() { v.syncTimerTo(v.lapic.TimerDeadline()) }

// syncTimerTo aims the host timer at at (armed false: stops it), the LAPIC
// timer's deadline as read.
func (v *VCPU) syncTimerTo(at int64, armed bool) {
	if armed == v.timerArmed && at == v.timerAt {
		return
	}
	v.timerAt, v.timerArmed = at, armed
	if !armed {
		v.timer.Stop()
		return
	}
	v.timer.Reset(time.Duration(at - v.clock.Now()))
}

// timerFired runs on a runtime timer goroutine: raise the vector, then kick.
func (v *VCPU) timerFired() {
	v.lapic.Tick()
	v.Notify()
}
