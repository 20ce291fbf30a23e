// A race test: many senders, many receivers, every interrupt exactly once,
// on the plain and the AVIC delivery path.

package vlapic

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chanSink wakes one receiver goroutine per CPU.
type chanSink []chan struct{}

func (s chanSink) Notify(cpu int) {
	select {
	case s[cpu] <- struct{}{}:
	default:
	}
}

// TestConcurrentDelivery has senders deliver to every LAPIC (from devices
// and through ICR writes, physical and logical, fixed and lowest priority,
// edge and level) while each LAPIC's "vCPU" acknowledges and EOIs, and
// checks that every interrupt is received exactly once. A sender has at most
// one interrupt in flight per (sender, target), so none may coalesce in IRR
// or on the AVIC backing page. In AVIC mode the edge senders post without
// the target's lock while the level sender takes it, so the receivers fold
// concurrently with both.
func TestConcurrentDelivery(t *testing.T) {
	for _, mode := range []struct {
		name string
		avic bool
	}{{"plain", false}, {"avic", true}} {
		t.Run(mode.name, func(t *testing.T) { testConcurrentDelivery(t, mode.avic) })
	}
}

func testConcurrentDelivery(t *testing.T, avic bool) {
	const n, senders, per = 16, 5, 300
	sink := make(chanSink, n)
	for i := range sink {
		sink[i] = make(chan struct{}, 1)
	}
	b := NewBus(n, &fakeClock{}, sink, Options{X2APIC: true, AVIC: avic})
	for i := range n {
		a := b.LAPIC(i)
		must(t, a.SetBase(a.Base()|BaseEXTD))
		wr(t, a, RegSVR, 0x1FF)
	}
	var inflight [senders][n]atomic.Bool
	var got [senders][n]atomic.Int64
	var levelEOIs atomic.Int64
	b.SetEOIHandler(func(v uint8) {
		if v != 0x40+3 {
			t.Errorf("EOI handler got vector %#x", v)
		}
		levelEOIs.Add(1)
	})

	done := make(chan struct{})
	var rx sync.WaitGroup
	for cpu := range n {
		rx.Add(1)
		go func() {
			defer rx.Done()
			a := b.LAPIC(cpu)
			for {
				select {
				case <-sink[cpu]:
				case <-done:
					return
				}
				for {
					v, ok := a.Acknowledge()
					if !ok {
						break
					}
					s := int(v) - 0x40
					got[s][cpu].Add(1)
					inflight[s][cpu].Store(false)
					a.EOI()
				}
			}
		}()
	}

	var tx sync.WaitGroup
	for s := range senders {
		tx.Add(1)
		go func() {
			defer tx.Done()
			v := uint8(0x40 + s)
			var sentTo [n]int
			for i, sent := 0, 0; sent < per*n; i++ {
				cpu := i % n
				if sentTo[cpu] == per || !inflight[s][cpu].CompareAndSwap(false, true) {
					runtime.Gosched()
					continue
				}
				sentTo[cpu]++
				sent++
				var accepted int
				switch s {
				case 0: // device, physical
					accepted = b.Deliver(fixed(v, Physical, uint32(cpu)))
				case 1: // device, logical cluster
					accepted = b.Deliver(fixed(v, Logical, uint32(cpu>>4)<<16|1<<(cpu&15)))
				case 2: // IPI from CPU (cpu+1)%n through its ICR
					eff, err := b.LAPIC((cpu+1)%n).WriteMSR(msr(RegICR), uint64(cpu)<<32|uint64(v))
					if err != nil {
						t.Error(err)
					}
					accepted = eff.Targets
				case 3: // level-triggered
					accepted = b.Deliver(Message{Vector: v, Trigger: Level, Assert: true, Dest: uint32(cpu), Source: -1})
				case 4: // lowest priority, one possible target
					accepted = b.Deliver(Message{Vector: v, Delivery: LowestPriority, Dest: uint32(cpu), Source: -1})
				}
				if accepted != 1 {
					t.Errorf("sender %d to %d: accepted %d", s, cpu, accepted)
				}
			}
		}()
	}
	tx.Wait()
	deadline := time.Now().Add(20 * time.Second)
	total := func() (sum int64) {
		for s := range senders {
			for c := range n {
				sum += got[s][c].Load()
			}
		}
		return sum
	}
	for total() < senders*n*per && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(done)
	rx.Wait()
	for s := range senders {
		for c := range n {
			if g := got[s][c].Load(); g != per {
				t.Errorf("sender %d -> cpu %d: received %d, want %d", s, c, g, per)
			}
		}
	}
	if l := levelEOIs.Load(); l != n*per {
		t.Errorf("level EOIs %d, want %d", l, n*per)
	}
}
