package vcpu

import (
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTgkillRaw: the assembly tgkill reaches the thread it names (signal
// 0 checks without sending) and reports the kernel's errno for one that
// does not exist.
func TestTgkillRaw(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if e := tgkillRaw(uintptr(os.Getpid()), uintptr(unix.Gettid()), 0); e != 0 {
		t.Errorf("tgkill of this thread: errno %v", unix.Errno(e))
	}
	if e := tgkillRaw(uintptr(os.Getpid()), 1<<22+1, 0); unix.Errno(e) != unix.ESRCH {
		t.Errorf("tgkill of no thread: errno %v, want ESRCH", unix.Errno(e))
	}
}

// TestFutexWakeOne: the assembly FUTEX_WAKE wakes a thread asleep in
// futexWait on the same word.
func TestFutexWakeOne(t *testing.T) {
	var w atomic.Uint32
	done := make(chan struct{})
	go func() {
		for w.Load() == 0 {
			futexWait(&w, 0)
		}
		close(done)
	}()
	// Asleep by then, as good as always: with a no-op wake it would
	// never come back, and the test fails at the deadline.
	time.Sleep(20 * time.Millisecond)
	w.Store(1)
	deadline := time.After(10 * time.Second)
	for {
		futexWake(&w)
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("the sleeper was not woken")
		case <-time.After(100 * time.Millisecond):
		}
	}
}
