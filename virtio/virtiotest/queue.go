// Package virtiotest is a fake transport for testing virtio device
// backends: an in-memory virtqueue of prepared chains that records what
// the device does with them. It is imported only by tests.
package virtiotest

import (
	"fmt"
	"sync"
	"time"

	"github.com/govmm/govmm/virtio"
)

// Used is one chain the device pushed back, with the length it reported.
type Used struct {
	Chain   *virtio.Chain
	Written uint32
}

// Queue implements virtio.QueueIO over a slice of chains.
type Queue struct {
	// kicks has room for one value: like the transport, kicks coalesce.
	kicks chan struct{}

	// mu guards everything below; the device goroutine and the test both
	// reach it.
	mu            sync.Mutex
	avail         []*virtio.Chain
	used          []Used
	interrupts    int
	kicksDisabled bool
	popErr        error
	closed        bool
	usedChanged   chan struct{} // closed and replaced on each Push
	pushErrs      []error
}

// NewQueue returns an empty queue.
func NewQueue() *Queue {
	return &Queue{kicks: make(chan struct{}, 1), usedChanged: make(chan struct{})}
}

// Add makes chains available and notifies the device, as a driver does
// (unconditionally: a driver may kick even when asked not to).
func (q *Queue) Add(chains ...*virtio.Chain) {
	q.AddQuiet(chains...)
	q.Kick()
}

// AddQuiet makes chains available without a notification.
func (q *Queue) AddQuiet(chains ...*virtio.Chain) {
	q.mu.Lock()
	q.avail = append(q.avail, chains...)
	q.mu.Unlock()
}

// Kick notifies the device (coalesced with a pending notification).
func (q *Queue) Kick() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	select {
	case q.kicks <- struct{}{}:
	default:
	}
}

// Close closes the kick channel, as the transport does on queue reset.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.kicks)
	}
}

// FailPop makes the next Pop (and every one after) return err.
func (q *Queue) FailPop(err error) {
	q.mu.Lock()
	q.popErr = err
	q.mu.Unlock()
}

// Used returns the chains pushed so far, in push order.
func (q *Queue) Used() []Used {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]Used(nil), q.used...)
}

// Pending is the number of chains still available (not popped).
func (q *Queue) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.avail)
}

// Interrupts is the number of Interrupt calls.
func (q *Queue) Interrupts() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.interrupts
}

// PushErrors lists the Pushes the fake refused (a written length larger
// than the chain's writable buffers).
func (q *Queue) PushErrors() []error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]error(nil), q.pushErrs...)
}

// WaitUsed waits until at least n chains were pushed, or timeout; it
// returns the used chains either way.
func (q *Queue) WaitUsed(n int, timeout time.Duration) []Used {
	deadline := time.After(timeout)
	for {
		q.mu.Lock()
		if len(q.used) >= n {
			u := append([]Used(nil), q.used...)
			q.mu.Unlock()
			return u
		}
		ch := q.usedChanged
		q.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return q.Used()
		}
	}
}

// Kicks implements virtio.QueueIO.
func (q *Queue) Kicks() <-chan struct{} { return q.kicks }

// Pop implements virtio.QueueIO.
func (q *Queue) Pop() (*virtio.Chain, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.popErr != nil {
		return nil, q.popErr
	}
	if len(q.avail) == 0 {
		return nil, nil
	}
	c := q.avail[0]
	q.avail = q.avail[1:]
	return c, nil
}

// Push implements virtio.QueueIO.
func (q *Queue) Push(c *virtio.Chain, written uint32) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if int(written) > c.WritableLen() {
		err := fmt.Errorf("virtiotest: push of chain %d: written %d > writable %d", c.Head, written, c.WritableLen())
		q.pushErrs = append(q.pushErrs, err)
		return err
	}
	q.used = append(q.used, Used{c, written})
	close(q.usedChanged)
	q.usedChanged = make(chan struct{})
	return nil
}

// Interrupt implements virtio.QueueIO.
func (q *Queue) Interrupt() {
	q.mu.Lock()
	q.interrupts++
	q.mu.Unlock()
}

// DisableKicks implements virtio.QueueIO.
func (q *Queue) DisableKicks() {
	q.mu.Lock()
	q.kicksDisabled = true
	q.mu.Unlock()
}

// EnableKicks implements virtio.QueueIO.
func (q *Queue) EnableKicks() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.kicksDisabled = false
	return len(q.avail) > 0
}

var _ virtio.QueueIO = (*Queue)(nil)

// WaitInterrupts waits until at least n Interrupt calls were made, or
// timeout; it returns the count. (A device interrupts after its Push, so
// a test that saw the push may not see the interrupt yet.)
func (q *Queue) WaitInterrupts(n int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		got := q.Interrupts()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Microsecond)
	}
}
