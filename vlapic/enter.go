package vlapic

// Entry is what the vCPU loop asks of its LAPIC before each entry into the
// guest, as one value taken under one lock (Enter): what TakePending
// gives, the TPR class for kvm_run's cr8, and when the timer is next due.
type Entry struct {
	Pending
	CR8 uint64 // TPR[7:4], as CR8 returns it
	// TimerAt is the Clock time at which Tick is next due, as
	// TimerDeadline returns it; TimerArmed is false while the timer is
	// stopped.
	TimerAt    int64
	TimerArmed bool
}

// Enter is Tick, TakePending, CR8 and TimerDeadline in one lock round
// trip: the timer runs (a vector it raises is in this very look, so unlike
// Tick it notifies no one: the caller is the vCPU that will take it), the
// latched events are taken, the vector to present is looked for, and the
// TPR class and the timer's deadline are read. Every exit pays for it, so
// it is one acquisition where the loop used to make five (issue 17's exit
// floor); acknowledging the vector, when it injects one, is a second.
// The clock is read only while the timer is armed: a stopped timer cannot
// be due, and the read (a vDSO clock_gettime) was a quarter of govmm's own
// time per exit in BenchmarkExit (vcpu/exitcost_test.go).
func (a *LAPIC) Enter() Entry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.t.armed {
		a.tickLocked(a.bus.clock.Now())
	}
	e := Entry{Pending: Pending{Events: a.ev}, CR8: uint64(a.tpr >> 4), TimerAt: a.t.deadline, TimerArmed: a.t.armed}
	a.ev = Events{}
	e.Vector, e.Fixed, e.Requested = a.requestLocked()
	return e
}
