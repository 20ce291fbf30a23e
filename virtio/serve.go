package virtio

// Handler serves one chain: it returns the number of bytes it wrote to the
// chain's device-writable buffers (what Push reports to the driver). An
// error means the chain cannot be answered at all (not even with a status
// byte): the queue stops and the device calls Activation.NeedsReset.
type Handler func(c *Chain) (written uint32, err error)

// busyMarker is a queue that records when its device has a chain in hand
// (Queue: QueueStats.BusySince).
type busyMarker interface{ markBusy(on bool) }

// Serve runs the serving loop of one queue on the calling goroutine until
// the queue's kick channel is closed (queue reset) or stop is closed, and
// returns nil then. It returns an error, without serving further, when Pop
// reports a broken ring or handle cannot answer a chain; the caller passes
// it to Activation.NeedsReset.
//
// Chains are served in batches bracketed by DisableKicks/EnableKicks, one
// Interrupt per batch. stop is looked at between chains, never inside one,
// so a chain taken from the ring is always pushed back: Reset leaves no
// request half done.
func Serve(q QueueIO, stop <-chan struct{}, handle Handler) error {
	return ServeWhen(q, stop, nil, nil, handle)
}

// ServeWhen is Serve for a queue whose chains can be served only when the
// device has something for them (a console's receiveq holds buffers until
// there is input). ready reports whether there is work; chains are popped
// only while it does, and wake (which may be nil) is a signal that ready
// may have become true. A nil ready means always ready.
func ServeWhen(q QueueIO, stop, wake <-chan struct{}, ready func() bool, handle Handler) error {
	kicks := q.Kicks()
	for {
		// Drain first, before waiting for a kick: the driver may have made
		// buffers available before DRIVER_OK, when its kick went nowhere.
		if stopped, err := drain(q, stop, ready, handle); stopped || err != nil {
			return err
		}
		select {
		case <-stop:
			return nil
		case _, ok := <-kicks:
			if !ok {
				return nil
			}
		case <-wake:
		}
	}
}

// drain serves chains until the ring is empty (with kicks re-enabled and
// no buffer having slipped in meanwhile), ready says there is no work, or
// stop is closed (stopped).
func drain(q QueueIO, stop <-chan struct{}, ready func() bool, handle Handler) (stopped bool, err error) {
	for {
		q.DisableKicks()
		pushed := false
		empty := false
		for !empty {
			if isClosed(stop) {
				stopped = true
				break
			}
			if ready != nil && !ready() {
				break
			}
			var c *Chain
			c, err = q.Pop()
			if err != nil {
				break
			}
			if c == nil {
				empty = true
				break
			}
			var n uint32
			if b, ok := q.(busyMarker); ok {
				b.markBusy(true)
				n, err = handle(c)
				b.markBusy(false)
			} else {
				n, err = handle(c)
			}
			if err != nil {
				break
			}
			if err = q.Push(c, n); err != nil {
				break
			}
			pushed = true
		}
		// Chains already pushed are completed whatever happens next: the
		// driver must hear of them.
		if pushed {
			q.Interrupt()
		}
		if stopped || err != nil {
			return stopped, err
		}
		more := q.EnableKicks()
		// Not ready: buffers waiting on the ring are no reason to loop
		// (that would spin); wake or a kick brings us back.
		if !empty || !more {
			return false, nil
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
