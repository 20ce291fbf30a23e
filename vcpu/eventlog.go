// This file holds the vCPU's event log: its last exits, kicks, INITs,
// SIPIs and injections, for error messages and dumps.

package vcpu

import (
	"fmt"
	"iter"
	"strings"
)

// eventLog keeps a vCPU's last few events: the exits it took (reason and
// RIP), the kicks that ended KVM_RUN, the INITs and SIPIs it acted on, the
// NMIs and vectors it injected. A failure the guest's state alone does not
// explain (an emulation failure in code that ran correctly before, the
// in-guest fuzzer's restarted CPUs) is read from what the vCPU did just
// before it: the failure's message and the USR2 dump print the log.
//
// Concurrency: written and read only by the vCPU's own thread (the loop,
// recover, maybeDump). One array store per event, no lock, no allocation:
// every exit pays for it.
type eventLog struct {
	ev [eventLogLen]event
	n  uint64 // events logged since the vCPU was made
}

// eventLogLen is a power of two: every exit's add takes its slot with a
// mask, not a division.
const eventLogLen = 32

// event is one entry of the log. What arg holds depends on kind.
type event struct {
	kind eventKind
	arg  uint32
	rip  uint64 // RIP when the event happened (KVM's sync registers)
}

type eventKind uint8

const (
	evExit   eventKind = iota // a KVM exit; arg: the exit reason
	evKick                    // KVM_RUN ended by a signal (EINTR): a kick
	evInject                  // KVM_INTERRUPT; arg: the vector
	evNMI                     // an NMI injected
	evSMI                     // an SMI injected; arg 0: dropped (no SMM)
	evINIT                    // INIT acted on; arg: further exits its completion served
	evSIPI                    // started by SIPI; arg: the vector
)

func (l *eventLog) add(kind eventKind, arg uint32, rip uint64) {
	l.ev[l.n%eventLogLen] = event{kind, arg, rip}
	l.n++
}

// newestFirst yields the events still in the log, newest first.
func (l *eventLog) newestFirst() iter.Seq[event] {
	return func(yield func(event) bool) {
		for i := l.n; i > 0 && l.n-i < eventLogLen; i-- {
			if !yield(l.ev[(i-1)%eventLogLen]) {
				return
			}
		}
	}
}

// lastExit is the reason of the newest exit in the log; false if it holds
// none.
func (l *eventLog) lastExit() (uint32, bool) {
	for e := range l.newestFirst() {
		if e.kind == evExit {
			return e.arg, true
		}
	}
	return 0, false
}

// parkedByINIT says whether the newest event is an INIT acted on: the
// vCPU waits for a SIPI since, or waited when the VM ended (a vCPU that
// a SIPI started, or that ran at all, logged that after it).
func (l *eventLog) parkedByINIT() bool {
	for e := range l.newestFirst() {
		return e.kind == evINIT
	}
	return false
}

// lastSIPI is the vector of the newest SIPI in the log, if no exit came
// after it: the vCPU has run only the page the SIPI started it at. False
// otherwise. The newest event, the exit being reported, does not count.
func (l *eventLog) lastSIPI() (uint8, bool) {
	newest := true
	for e := range l.newestFirst() {
		switch {
		case e.kind == evSIPI:
			return uint8(e.arg), true
		case e.kind == evExit && !newest:
			return 0, false
		}
		newest = false
	}
	return 0, false
}

// String is the log, oldest first, e.g. "exit 2@0xffffffff81000a3c, kick@0x8,
// INIT(+0)@0x8, SIPI 0x8@0x0, exit 17@0x4". Exit reasons are KVM's numbers
// (KVM_EXIT_*).
func (l *eventLog) String() string {
	if l.n == 0 {
		return "none"
	}
	var b strings.Builder
	first := uint64(0)
	if l.n > eventLogLen {
		first = l.n - eventLogLen
	}
	for i := first; i < l.n; i++ {
		if i > first {
			b.WriteString(", ")
		}
		e := l.ev[i%eventLogLen]
		switch e.kind {
		case evExit:
			fmt.Fprintf(&b, "exit %d", e.arg)
		case evKick:
			b.WriteString("kick")
		case evInject:
			fmt.Fprintf(&b, "inject %#x", e.arg)
		case evNMI:
			b.WriteString("NMI")
		case evSMI:
			b.WriteString([]string{"SMI dropped (no SMM)", "SMI"}[min(e.arg, 1)])
		case evINIT:
			fmt.Fprintf(&b, "INIT(+%d)", e.arg)
		case evSIPI:
			fmt.Fprintf(&b, "SIPI %#x", e.arg)
		}
		fmt.Fprintf(&b, "@%#x", e.rip)
	}
	if first > 0 {
		return fmt.Sprintf("%s (the last %d of %d)", b.String(), eventLogLen, l.n)
	}
	return b.String()
}
