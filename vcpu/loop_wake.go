// This file holds the wake-up of a sleeping vCPU thread: a futex word of
// its own, which the waker wakes with one FUTEX_WAKE.

package vcpu

import "sync/atomic"

// waker is a vCPU thread's sleep (halted, or waiting for SIPI) and its
// wake-up. The vCPU goroutine is locked to its thread (Run), so the
// sender's one FUTEX_WAKE reaches the very thread that injects, with no
// hop through Go's scheduler: with a channel, the send made the goroutine
// runnable on the sender's P, another thread had to find it there and
// hand a P to the locked thread (two thread wake-ups, the first of them
// often by sysmon 20 µs or more later, the sender's P being in KVM_RUN).
//
// Concurrency: word is 0 (no wake-up pending), 1 (a wake-up pending) or 2
// (the vCPU's thread is asleep on it, or about to be). wake may be called
// from any thread; pending, take and sleep only from the vCPU's.
type waker struct {
	word atomic.Uint32
}

const (
	wakeNone = iota
	wakePending
	wakeSleeper
)

// wake makes a wake-up pending and wakes the thread if it sleeps. It
// never blocks.
func (w *waker) wake() {
	if w.word.Swap(wakePending) == wakeSleeper {
		futexWake(&w.word)
	}
}

// pending says whether a wake-up is pending (halt polling's spin).
func (w *waker) pending() bool { return w.word.Load() == wakePending }

// take consumes a pending wake-up, saying whether there was one.
func (w *waker) take() bool { return w.word.CompareAndSwap(wakePending, wakeNone) }

// sleep returns when a wake-up is pending, and consumes it: at once if
// one already is.
func (w *waker) sleep() {
	if w.word.CompareAndSwap(wakeNone, wakeSleeper) {
		for w.word.Load() == wakeSleeper {
			futexWait(&w.word, wakeSleeper)
		}
	}
	w.word.Store(wakeNone)
}
