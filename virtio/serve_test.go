package virtio_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/virtiotest"
)

const wait = 5 * time.Second

func chain(head uint16) *virtio.Chain {
	return &virtio.Chain{Head: head, Writable: [][]byte{make([]byte, 4)}}
}

func serveAsync(f func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	return done
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Fatal("Serve did not return")
		return nil
	}
}

func TestServe(t *testing.T) {
	q := virtiotest.NewQueue()
	// Made available before the device started, with no kick: served all
	// the same.
	q.AddQuiet(chain(1), chain(2), chain(3))
	stop := make(chan struct{})
	done := serveAsync(func() error {
		return virtio.Serve(q, stop, func(c *virtio.Chain) (uint32, error) { return uint32(c.Head), nil })
	})
	u := q.WaitUsed(3, wait)
	if len(u) != 3 {
		t.Fatalf("%d of 3 served before any kick", len(u))
	}
	for i, x := range u {
		if x.Chain.Head != uint16(i+1) || x.Written != uint32(i+1) {
			t.Errorf("used %d: head %d written %d", i, x.Chain.Head, x.Written)
		}
	}
	q.Add(chain(4))
	if len(q.WaitUsed(4, wait)) != 4 {
		t.Fatal("kicked chain not served")
	}
	if n := q.WaitInterrupts(2, wait); n < 2 || n > 4 {
		t.Errorf("%d interrupts for 2 batches", n)
	}
	close(stop)
	if err := result(t, done); err != nil {
		t.Error(err)
	}
}

func TestServeQueueReset(t *testing.T) {
	q := virtiotest.NewQueue()
	done := serveAsync(func() error {
		return virtio.Serve(q, nil, func(*virtio.Chain) (uint32, error) { return 0, nil })
	})
	q.Close()
	if err := result(t, done); err != nil {
		t.Error(err)
	}
	if q.Interrupts() != 0 {
		t.Error("interrupt with nothing pushed")
	}
}

func TestServeErrors(t *testing.T) {
	bad := errors.New("cannot answer")
	q := virtiotest.NewQueue()
	q.AddQuiet(chain(1), chain(2), chain(3))
	err := virtio.Serve(q, nil, func(c *virtio.Chain) (uint32, error) {
		if c.Head == 2 {
			return 0, bad
		}
		return 0, nil
	})
	if !errors.Is(err, bad) {
		t.Errorf("err %v", err)
	}
	if u := q.Used(); len(u) != 1 || q.Interrupts() != 1 {
		t.Errorf("%d used, %d interrupts: want the chain before the bad one pushed and signalled", len(u), q.Interrupts())
	}

	q = virtiotest.NewQueue()
	q.FailPop(virtio.ErrBadChain)
	if err := virtio.Serve(q, nil, func(*virtio.Chain) (uint32, error) { return 0, nil }); !errors.Is(err, virtio.ErrBadChain) {
		t.Errorf("Pop error: %v", err)
	}
}

func TestServeWhen(t *testing.T) {
	q := virtiotest.NewQueue()
	var work atomic.Int32
	wake := make(chan struct{}, 1)
	stop := make(chan struct{})
	done := serveAsync(func() error {
		return virtio.ServeWhen(q, stop, wake, func() bool { return work.Load() > 0 },
			func(*virtio.Chain) (uint32, error) { work.Add(-1); return 1, nil })
	})
	q.Add(chain(1), chain(2), chain(3))
	time.Sleep(5 * time.Millisecond)
	if len(q.Used()) != 0 || q.Pending() != 3 {
		t.Fatal("chains taken with no work")
	}
	work.Store(2)
	wake <- struct{}{}
	if len(q.WaitUsed(2, wait)) != 2 {
		t.Fatal("woken, not served")
	}
	time.Sleep(5 * time.Millisecond)
	if q.Pending() != 1 {
		t.Errorf("%d pending, want 1", q.Pending())
	}
	close(stop)
	if err := result(t, done); err != nil {
		t.Error(err)
	}
}
