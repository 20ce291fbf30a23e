package console

import "sync"

// input is the bytes queued for the guest and not yet written into its
// receive buffers. Input appends from any goroutine; the receiveq
// goroutine takes from the front. Bytes leave it only as they are copied
// into a chain that is then pushed, so none is dropped, and a reset keeps
// what the guest has not been given.
type input struct {
	mu      sync.Mutex
	pending []byte // guarded by mu

	// wake has room for one signal: "pending may have become non-empty".
	// A full channel already says so.
	wake chan struct{}
}

func newInput() *input { return &input{wake: make(chan struct{}, 1)} }

func (in *input) add(b []byte) {
	if len(b) == 0 {
		return
	}
	in.mu.Lock()
	in.pending = append(in.pending, b...)
	in.mu.Unlock()
	select {
	case in.wake <- struct{}{}:
	default:
	}
}

func (in *input) ready() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.pending) > 0
}

// fill copies pending bytes into bufs in order and removes them; it
// returns the count. The caller pushes the chain right after (there is no
// way to fail between the two that would lose the bytes).
func (in *input) fill(bufs [][]byte) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, b := range bufs {
		if n == len(in.pending) {
			break
		}
		n += copy(b, in.pending[n:])
	}
	in.pending = in.pending[n:]
	if len(in.pending) == 0 {
		in.pending = nil // let a large burst's array go
	}
	return n
}
