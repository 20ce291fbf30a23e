// This file holds Tally, one vCPU's exits counted by cause, and the
// window that keeps an exit and what serving it counted on one side of a
// reader's look.

package exitcause

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Tally is one vCPU's exits by cause. The vCPU's own thread counts them
// (it holds the Tally by pointer, so counting is one add on a page it
// already touches, with no call through an interface); anyone reads them.
//
// Serving an exit can count more than the exit, elsewhere: an ICR write
// counts the IPI it sent and the CPUs it reached (package accounting's
// IPISent and IPIDelivered), a receiver's EOI or interrupt-window exit is
// charged to the interrupt that made it. A reader that compares those
// with the exits (a measured section's two ends) must not look between
// the exit's count and the rest, or one end has the exit and the other
// its IPIs (62 send exits against 63 IPIs in a section, once in CI). So
// such an exit is counted with Begin, which opens a window that End
// closes once its handler has returned, and ReadOutside reads at a moment
// no window is open: a sequence lock whose only writer is the vCPU's
// thread.
type Tally struct {
	// window is the lock's word: bit 0 is set while a window is open,
	// bits 1-15 hold the cause of the exit that opened it, and the rest
	// count the windows opened (so that a reader sees a window that opened
	// and closed while it read). Written only by the vCPU's thread, hence
	// plain stores; read by anyone.
	window  atomic.Uint64
	byCause [NumCauses]atomic.Uint64
}

const (
	windowOpen       = 1
	windowCauseShift = 1
	windowCauseMask  = 1<<15 - 1
	windowSeqShift   = 16
)

// Count counts one exit of cause c whose serving counts nothing beside it
// (or that may block, such as a HLT: its wake-up is counted when it
// comes).
func (t *Tally) Count(c Cause) { t.byCause[c].Add(1) }

// Begin counts one exit of cause c and opens its window: what serving it
// counts until End is read together with it. The vCPU's thread only; a
// window must not stay open across a wait for another vCPU (a halt, a
// pause), since a reader waits for it to close.
func (t *Tally) Begin(c Cause) {
	seq := t.window.Load()>>windowSeqShift + 1
	t.window.Store(seq<<windowSeqShift | uint64(c)<<windowCauseShift | windowOpen)
	t.byCause[c].Add(1)
}

// End closes the window Begin opened, if one is open. The vCPU's thread
// only.
func (t *Tally) End() {
	if w := t.window.Load(); w&windowOpen != 0 {
		t.window.Store(w >> windowSeqShift << windowSeqShift)
	}
}

// Serving says which exit's window is open, if one is.
func (t *Tally) Serving() (Cause, bool) {
	w := t.window.Load()
	return Cause(w >> windowCauseShift & windowCauseMask), w&windowOpen != 0
}

// Load is how many exits of cause c were counted.
func (t *Tally) Load(c Cause) uint64 { return t.byCause[c].Load() }

// Total is how many exits were counted, all causes.
func (t *Tally) Total() uint64 {
	var n uint64
	for i := range t.byCause {
		n += t.byCause[i].Load()
	}
	return n
}

// LoadAll copies every cause's count into dst.
func (t *Tally) LoadAll(dst *[NumCauses]uint64) {
	for i := range t.byCause {
		dst[i] = t.byCause[i].Load()
	}
}

// ReadOutside calls read, again if need be, until one call ran while no
// window was open, or while one stayed open that counts an exit of a cause
// waitFor refuses to wait for (because serving it may wait on the reader:
// the marker's own port, whose handler is the reader). read reads the
// Tally and whatever else the vCPU's exits count; it runs on the caller's
// thread and must not block.
func (t *Tally) ReadOutside(read func(), waitFor func(Cause) bool) {
	for tries := 0; ; tries++ {
		w := t.window.Load()
		if w&windowOpen != 0 && waitFor(Cause(w>>windowCauseShift&windowCauseMask)) {
			backOff(tries)
			continue
		}
		read()
		if t.window.Load() == w {
			return
		}
	}
}

// backOff waits a little before a reader looks at a window again: a
// window lasts one handler, a few microseconds, unless its vCPU's thread
// lost its host CPU (the nested hosts have two for four vCPUs), which the
// reader's own must then not keep.
func backOff(tries int) {
	switch {
	case tries < 64:
	case tries < 1024:
		runtime.Gosched()
	default:
		time.Sleep(20 * time.Microsecond)
	}
}
