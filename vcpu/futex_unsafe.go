// This file holds the futex system calls of a halted vCPU's sleep (loop_wake.go),
// the package's one other unsafe use: the kernel takes the word's address.

package vcpu

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex operations (linux/futex.h), which golang.org/x/sys/unix does
// not name.
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait sleeps while *w == val, until futexWake, a signal or a
// spurious wake-up; the caller looks at *w again either way.
func futexWait(w *atomic.Uint32, val uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitPrivate, uintptr(val), 0, 0, 0)
}

// futexWake wakes the thread sleeping on w, if one is. FUTEX_WAKE never
// sleeps, so it needs no entersyscall: the IPI's sender pays it at every
// wake-up (docs/exit-cost.md).
func futexWake(w *atomic.Uint32) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakePrivate, 1, 0, 0, 0)
}
