package kvm

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestRetryEINTR: a creating ioctl interrupted by a signal is issued again
// until it answers something else; any other error is returned at once.
func TestRetryEINTR(t *testing.T) {
	calls := 0
	r, err := retryEINTR(func() (uintptr, error) {
		calls++
		if calls < 3 {
			return 0, unix.EINTR
		}
		return 7, nil
	})
	if r != 7 || err != nil || calls != 3 {
		t.Errorf("got (%d, %v) after %d calls, want (7, nil) after 3", r, err, calls)
	}
	calls = 0
	_, err = retryEINTR(func() (uintptr, error) { calls++; return 0, unix.ENOMEM })
	if err != unix.ENOMEM || calls != 1 {
		t.Errorf("got %v after %d calls, want ENOMEM after 1", err, calls)
	}
}
