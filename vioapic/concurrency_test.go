// A concurrency test: device goroutines toggle lines, a LAPIC-like consumer
// EOIs level interrupts, vCPU goroutines program entries and read
// registers, all at once; run under -race.

package vioapic

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lapicSink models the LAPICs: level fires are queued for EOI, and a pin
// with two fires outstanding (no EOI in between) is an error.
type lapicSink struct {
	outstanding [Pins]atomic.Int32
	double      atomic.Int32
	fired       atomic.Int64
	queue       chan uint8
}

func (s *lapicSink) Fire(pin int, rte uint64) bool {
	s.fired.Add(1)
	if rte&RTELevel != 0 {
		if s.outstanding[pin].Add(1) > 1 {
			s.double.Add(1)
		}
		s.queue <- uint8(rte)
	}
	return true
}

const (
	levelPins = 8 // pins 0-7 level, vector 0x40+pin; 8-15 edge
	edgePins  = 8
)

func TestConcurrency(t *testing.T) {
	s := &lapicSink{queue: make(chan uint8, 4*Pins)}
	a := New(1, s)
	for p := range levelPins {
		setRTE(a, p, RTELevel|uint64(0x40+p))
	}
	for p := levelPins; p < levelPins+edgePins; p++ {
		setRTE(a, p, uint64(0x60+p))
	}

	// The consumer: acknowledge, then EOI, like a guest handler.
	var consumer sync.WaitGroup
	consumer.Go(func() {
		for v := range s.queue {
			s.outstanding[v-0x40].Add(-1)
			if v%2 == 0 {
				a.EOI(v)
			} else {
				w32(a, RegEOI, uint32(v))
			}
		}
	})

	var wg sync.WaitGroup
	const iters = 2000
	for d := range 4 { // devices
		wg.Go(func() {
			for i := range iters {
				p := (d*7 + i) % (levelPins + edgePins)
				a.SetLine(p, i%2 == 0)
			}
		})
	}
	for c := range 2 { // vCPUs masking and unmasking level entries
		wg.Go(func() {
			var buf [4]byte
			for i := range iters {
				p := (c + i) % levelPins
				e := uint64(RTELevel | 0x40 + p)
				if i%3 == 0 {
					e |= RTEMasked
				}
				// The IOREGSEL/IOWIN pair is not atomic across vCPUs (a
				// guest serialises it with a lock); here each write is
				// one complete RTE update under a test lock.
				rteLock.Lock()
				setRTE(a, p, e)
				rteLock.Unlock()
				a.ReadMMIO(RegWin, buf[:])
				_ = a.Snapshot()
			}
		})
	}
	wg.Wait()

	// Quiesce: drop every line; then nothing new can fire, and once the
	// consumer has EOIed what is in flight (Remote IRR is set before Fire
	// is called, so it shows what is) the queue can be closed.
	for p := range Pins {
		a.SetLine(p, false)
	}
	deadline := time.Now().Add(10 * time.Second)
	for a.Snapshot().RemoteIRR != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Remote IRR stuck at %#x", a.Snapshot().RemoteIRR)
		}
		runtime.Gosched()
	}
	close(s.queue)
	consumer.Wait()

	if n := s.double.Load(); n != 0 {
		t.Errorf("%d level fires while one was outstanding", n)
	}
	st := a.Snapshot()
	if st.RemoteIRR != 0 || st.Lines != 0 {
		t.Errorf("after quiescing: Remote IRR %#x lines %#x", st.RemoteIRR, st.Lines)
	}
	var sum uint64
	for _, ps := range st.Pins {
		sum += ps.Fired
	}
	if sum != uint64(s.fired.Load()) || sum == 0 {
		t.Errorf("Fired counters sum to %d, sink saw %d", sum, s.fired.Load())
	}
}

var rteLock sync.Mutex
