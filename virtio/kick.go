package virtio

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// kicker is one queue's notification path. Its eventfd is the one thing
// a guest notify reaches, by KVM_IOEVENTFD (no exit) or by WriteBAR (an
// exit): both write it. While the queue is active a goroutine reads it
// through Go's poller and forwards one value per read to Kicks.
//
// The goroutine reads a dup of the eventfd, so stopping it is closing the
// dup (the poller wakes the blocked Read) while the eventfd itself, which
// KVM holds, stays registered.
type kicker struct {
	fd int // the eventfd; valid until close

	// Guarded by the transport's mu (start and stop run under it).
	f    *os.File      // the dup the goroutine reads; nil when stopped
	ch   chan struct{} // the queue's Kicks channel, closed by stop
	done chan struct{} // closed when the goroutine has returned
}

func newKicker() (*kicker, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("virtio: eventfd: %w", err)
	}
	return &kicker{fd: fd}, nil
}

// notify adds 1 to the eventfd, as an ioeventfd does. It can fail only
// if the counter would pass 2^64-2, and then a kick is pending anyway.
func (k *kicker) notify() {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], 1)
	unix.Write(k.fd, b[:])
}

// start forwards notifications to ch until stop.
func (k *kicker) start(ch chan struct{}, st *QueueStats) error {
	dup, err := unix.FcntlInt(uintptr(k.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("virtio: dup eventfd: %w", err)
	}
	// The dup shares the eventfd's O_NONBLOCK, so os.NewFile makes it
	// pollable: Read parks the goroutine, not a thread.
	f := os.NewFile(uintptr(dup), "virtio-kick")
	k.f, k.ch, k.done = f, ch, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		var b [8]byte
		for {
			n, err := f.Read(b[:])
			if err != nil {
				// os.ErrClosed is stop; nothing else can fail on an
				// eventfd (the poller retries EAGAIN and EINTR).
				return
			}
			if n == 8 {
				st.Kicks.Add(binary.LittleEndian.Uint64(b[:]))
			}
			st.Wakeups.Add(1)
			select { // coalesce: one pending value is enough
			case ch <- struct{}{}:
			default:
			}
		}
	}(k.done)
	return nil
}

// stop joins the goroutine, closes Kicks, and drains the eventfd so a
// notify from before a reset is not a kick after it.
func (k *kicker) stop() {
	if k.f != nil {
		k.f.Close()
		<-k.done
		close(k.ch)
		k.f, k.ch, k.done = nil, nil, nil
	}
	var b [8]byte
	unix.Read(k.fd, b[:]) // non-blocking: EAGAIN when already 0
}

func (k *kicker) close() error {
	k.stop()
	return unix.Close(k.fd)
}
