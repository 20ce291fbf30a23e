// This file holds the futex system calls of a halted vCPU's sleep
// (loop_wake.go), the package's one other unsafe use: the kernel takes the
// word's address; and the sender's raw system calls (rawsys_amd64.s).

package vcpu

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The futex wait (linux/futex.h), which golang.org/x/sys/unix does not
// name; the wake is FUTEX_WAKE | FUTEX_PRIVATE_FLAG (rawsys_amd64.s).
const futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG

// futexWait sleeps while *w == val, until futexWake, a signal or a
// spurious wake-up; the caller looks at *w again either way.
func futexWait(w *atomic.Uint32, val uint32) {
	// syscall's, not x/sys/unix's: the same call without a trampoline on
	// a code page of its own.
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitPrivate, uintptr(val), 0, 0, 0)
}

// futexWake wakes the thread sleeping on w, if one is. FUTEX_WAKE never
// sleeps, so it needs no entersyscall: the IPI's sender pays it at every
// wake-up (docs/exit-cost.md).
func futexWake(w *atomic.Uint32) { futexWakeOne(unsafe.Pointer(w)) }

// futexWakeOne is FUTEX_WAKE of one waiter on the word at addr, kept a
// pointer so that the word is live and in place for the call
// (rawsys_amd64.s).
//
//go:noescape
func futexWakeOne(addr unsafe.Pointer)

// tgkillRaw is tgkill(2) (rawsys_amd64.s): the errno, 0 on success.
func tgkillRaw(pid, tid, sig uintptr) (errno uintptr)
