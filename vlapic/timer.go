// This file implements the APIC timer (SDM 11.5.4): one-shot, periodic and
// TSC-deadline modes on the injected Clock, the divide configuration, the
// current-count register and IA32_TSC_DEADLINE.
//
// The timer never runs by itself: TimerDeadline tells the VMM when to call
// Tick, and Tick fires it if the Clock says it is due. Rules:
//   - One-shot fires once, after which the current count reads 0.
//   - Periodic fires at most once per Tick: if several periods were missed
//     (the VMM was late), they are dropped and the next deadline is the next
//     period boundary after now (one pending IRR bit would coalesce them
//     anyway). As in KVM, a period is never shorter than minPeriodNS, so a
//     tiny initial count cannot make a timer storm.
//   - A masked LVT timer still expires and re-arms; it just raises nothing.
//   - TSC-deadline: a deadline at or before the current TSC fires at once
//     (in the MSR write); the MSR reads 0 once it fired; writing 0 disarms.
//   - Switching the LVT timer into or out of TSC-deadline mode stops the
//     timer and clears the initial count and the deadline (KVM's
//     apic_update_lvtt); one-shot <-> periodic keeps it running.
//   - Mode 3 (reserved) behaves as one-shot.

package vlapic

import (
	"math"
	"math/bits"
)

// minPeriodNS is KVM's min_timer_period_us (200 µs) for periodic mode.
const minPeriodNS = 200_000

// TimerMode is the LVT timer mode (bits 18:17).
type TimerMode uint8

const (
	TimerOneShot     TimerMode = 0
	TimerPeriodic    TimerMode = 1
	TimerTSCDeadline TimerMode = 2
)

type timer struct {
	initial  uint32
	dcr      uint32
	div      uint64 // divide value decoded from dcr
	period   int64  // ns for initial counts (0 when stopped)
	deadline int64  // Clock ns of the next expiry, when armed
	armed    bool
	tscDL    uint64 // IA32_TSC_DEADLINE, 0 when disarmed or fired
}

func (a *LAPIC) timerMode() TimerMode { return TimerMode(a.lvt[lvtTimer] >> 17 & 3) }

// divOf decodes the divide configuration register: 0b0000 = 2 ... 0b1011 = 1.
func divOf(dcr uint32) uint64 {
	shift := (dcr&3 | (dcr&8)>>1) + 1
	return 1 << (shift & 7)
}

// countsToNS converts timer counts to Clock nanoseconds, saturating.
func (a *LAPIC) countsToNS(c uint64) int64 {
	hi, lo := bits.Mul64(c*a.t.div, 1e9)
	if hi >= a.bus.busHz {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, a.bus.busHz)
	return int64(min(q, math.MaxInt64))
}

// nsToCounts converts nanoseconds to whole timer counts, saturating.
func (a *LAPIC) nsToCounts(ns int64) uint64 {
	d := 1e9 * a.t.div
	hi, lo := bits.Mul64(uint64(ns), a.bus.busHz)
	if hi >= d {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, d)
	return q
}

func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// effPeriod is the period the timer re-arms with.
func (a *LAPIC) effPeriod() int64 {
	p := max(a.t.period, 1)
	if a.timerMode() == TimerPeriodic {
		p = max(p, minPeriodNS)
	}
	return p
}

func (t *timer) stop() { t.armed, t.period = false, 0 }

// startLocked (re)starts a count-down of the initial count from now.
func (a *LAPIC) startLocked(now int64) {
	a.t.stop()
	if a.t.initial == 0 {
		return
	}
	a.t.period = a.countsToNS(uint64(a.t.initial))
	a.t.deadline = addSat(now, a.effPeriod())
	a.t.armed = true
}

// remainingLocked is the time to the next expiry for a count-down timer
// still armed: in (0, period] in periodic mode even when the VMM is late.
func (a *LAPIC) remainingLocked(now int64) int64 {
	rem := a.t.deadline - now
	if rem > 0 || a.timerMode() != TimerPeriodic {
		return max(rem, 0)
	}
	p := a.effPeriod()
	return p - (now-a.t.deadline)%p
}

func (a *LAPIC) ccrLocked(now int64) uint32 {
	if a.timerMode() == TimerTSCDeadline || !a.t.armed || a.t.initial == 0 {
		return 0
	}
	return uint32(min(a.nsToCounts(a.remainingLocked(now)), uint64(a.t.initial)))
}

func (a *LAPIC) writeTimerICRLocked(v uint32) {
	if a.timerMode() == TimerTSCDeadline {
		return
	}
	a.t.initial = v
	a.startLocked(a.bus.clock.Now())
}

// writeDCRLocked changes the divider; a running count-down keeps its
// remaining counts, which now last longer or shorter (KVM rescales too).
func (a *LAPIC) writeDCRLocked(v uint32) {
	a.t.dcr = v
	div := divOf(v)
	if div == a.t.div {
		return
	}
	if !a.t.armed || a.timerMode() == TimerTSCDeadline {
		a.t.div = div
		return
	}
	now := a.bus.clock.Now()
	left := min(a.nsToCounts(a.remainingLocked(now)), uint64(a.t.initial))
	a.t.div = div
	a.t.period = a.countsToNS(uint64(a.t.initial))
	a.t.deadline = addSat(now, a.countsToNS(left))
}

func (a *LAPIC) writeLVTTimerLocked(v uint32) {
	old := a.timerMode()
	a.lvt[lvtTimer] = v
	if (old == TimerTSCDeadline) != (a.timerMode() == TimerTSCDeadline) {
		a.t.stop()
		a.t.initial, a.t.tscDL = 0, 0
	}
}

// tickLocked fires the timer if it is due; it reports whether IRR changed.
func (a *LAPIC) tickLocked(now int64) bool {
	if !a.t.armed || now < a.t.deadline {
		return false
	}
	switch a.timerMode() {
	case TimerPeriodic:
		p := a.effPeriod()
		a.t.deadline = addSat(now, p-(now-a.t.deadline)%p)
	case TimerTSCDeadline:
		a.t.armed, a.t.tscDL = false, 0
	default:
		a.t.armed = false
	}
	return a.localDeliverLocked(lvtTimer)
}

// Tick fires the timer if the Clock has reached its deadline, raising the
// LVT timer vector unless it is masked, and re-arms a periodic timer.
func (a *LAPIC) Tick() {
	now := a.bus.clock.Now()
	a.mu.Lock()
	notify := a.tickLocked(now)
	a.mu.Unlock()
	if notify {
		a.bus.sink.Notify(a.cpu)
	}
}

// TimerDeadline returns the Clock time at which Tick should next be called;
// armed is false when the timer is stopped.
func (a *LAPIC) TimerDeadline() (ns int64, armed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.t.deadline, a.t.armed
}

func (a *LAPIC) readTSCDeadline() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mode == ModeDisabled || a.timerMode() != TimerTSCDeadline {
		return 0
	}
	return a.t.tscDL
}

// WriteTSCDeadline writes IA32_TSC_DEADLINE, judged against tsc, the
// guest's TSC at the write as KVM has it: armed (or with 0 disarmed),
// firing at once when v is at or before tsc. It is ignored unless the LVT
// timer is in TSC-deadline mode, as in KVM.
//
// Why the caller reads the TSC: KVM's own LAPIC compares with
// kvm_read_l1_tsc, the vCPU's TSC under its current offset
// (start_sw_tscdeadline, arch/x86/kvm/lapic.c). On a host whose TSC KVM
// finds unstable (the nested AMD-V host says so as it starts), KVM moves
// that offset at every vcpu_load: the guest TSC resumes where it stopped
// and then catches up with kernel time (kvm_arch_vcpu_load,
// kvm_guest_time_update). The host TSC plus an offset measured once drifted
// from it by 20 ms and up to 250 ms there, so a deadline a tick ahead could
// look already past: fired at once, re-armed by the guest, fired again, a
// timer interrupt per entry and a guest that no longer advances (what
// stop 37's CI's two boots that never ended looked like; not proven).
func (a *LAPIC) WriteTSCDeadline(v, tsc uint64) {
	b := a.bus
	a.mu.Lock()
	if a.mode == ModeDisabled || a.timerMode() != TimerTSCDeadline {
		a.mu.Unlock()
		return
	}
	a.t.armed, a.t.tscDL = false, v
	notify := false
	if v != 0 {
		now := b.clock.Now()
		if v <= tsc {
			a.t.tscDL = 0
			notify = a.localDeliverLocked(lvtTimer)
		} else {
			hi, lo := bits.Mul64(v-tsc, 1e9)
			ns := int64(math.MaxInt64)
			if hi < b.tscHz {
				q, _ := bits.Div64(hi, lo, b.tscHz)
				ns = int64(min(q, math.MaxInt64))
			}
			a.t.deadline, a.t.armed = addSat(now, ns), true
		}
	}
	a.mu.Unlock()
	if notify {
		b.sink.Notify(a.cpu)
	}
}
