package dashboard

import (
	"time"

	"github.com/govmm/govmm/accounting"
)

// sample is the counters at one instant, compact enough (a few words per
// vCPU, no maps) that the ring can hold minutes of them for 1024 vCPUs.
type sample struct {
	at        time.Time
	exits     []uint64             // per vCPU
	classes   [][numClasses]uint64 // per vCPU
	sent      [][numKinds]uint64   // per vCPU: IPIs it sent, by kind
	delivered [][numKinds]uint64   // per vCPU: targets its IPIs reached, by kind
	injected  []uint64             // per vCPU
}

const numKinds = int(accounting.NumIPIKinds)

// kindIndex maps the report's IPI kind names back to accounting.IPIKind.
var kindIndex = func() map[string]int {
	m := make(map[string]int, numKinds)
	for k := range numKinds {
		m[accounting.IPIKind(k).String()] = k
	}
	return m
}()

func newSample(at time.Time, r *accounting.Report) *sample {
	n := len(r.CPUs)
	s := &sample{at: at, exits: make([]uint64, n), classes: make([][numClasses]uint64, n),
		sent: make([][numKinds]uint64, n), delivered: make([][numKinds]uint64, n), injected: make([]uint64, n)}
	for i, c := range r.CPUs {
		s.exits[i] = c.Exits
		s.classes[i] = byClass(c.ByCause)
		s.injected[i] = c.Injected
		for k, v := range c.IPISent {
			if j, ok := kindIndex[k]; ok {
				s.sent[i][j] = v
			}
		}
		for k, v := range c.IPIDelivered {
			if j, ok := kindIndex[k]; ok {
				s.delivered[i][j] = v
			}
		}
	}
	return s
}

// zeroSample stands before the first sample, so that what the VM did
// before the dashboard started counts as one (long) interval.
func zeroSample(like *sample) *sample {
	n := len(like.exits)
	return &sample{at: like.at, exits: make([]uint64, n), classes: make([][numClasses]uint64, n),
		sent: make([][numKinds]uint64, n), delivered: make([][numKinds]uint64, n), injected: make([]uint64, n)}
}

func (s *sample) totalExits() uint64 {
	var t uint64
	for _, n := range s.exits {
		t += n
	}
	return t
}

func (s *sample) totalClasses() [numClasses]uint64 {
	var t [numClasses]uint64
	for _, c := range s.classes {
		for i, n := range c {
			t[i] += n
		}
	}
	return t
}

func (s *sample) totalKinds(per [][numKinds]uint64) [numKinds]uint64 {
	var t [numKinds]uint64
	for _, c := range per {
		for i, n := range c {
			t[i] += n
		}
	}
	return t
}

func sumKinds(k [numKinds]uint64) uint64 {
	var t uint64
	for _, n := range k {
		t += n
	}
	return t
}

// delta is cur - prev for a counter; a counter never goes back, but a
// source that restarts must not produce 2^64 exits per second.
func delta(cur, prev uint64) uint64 {
	if cur < prev {
		return 0
	}
	return cur - prev
}

// ring keeps the last len(buf) samples, oldest first when listed.
type ring struct {
	buf  []*sample
	next int
	n    int
}

func newRing(size int) *ring { return &ring{buf: make([]*sample, size)} }

func (r *ring) push(s *sample) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	if r.n < len(r.buf) {
		r.n++
	}
}

// last returns the i-th newest sample (0 = newest), nil if there is none.
func (r *ring) last(i int) *sample {
	if i >= r.n {
		return nil
	}
	return r.buf[(r.next-1-i+2*len(r.buf))%len(r.buf)]
}

// list returns the samples, oldest first.
func (r *ring) list() []*sample {
	out := make([]*sample, r.n)
	for i := range out {
		out[i] = r.last(r.n - 1 - i)
	}
	return out
}
