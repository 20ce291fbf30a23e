package accounting

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govmm/govmm/internal/tscclock"
	"github.com/govmm/govmm/vlapic"
)

type stepClock struct{ now atomic.Int64 }

func (c *stepClock) Now() int64       { return c.now.Load() }
func (c *stepClock) TSC() uint64      { return uint64(c.now.Load()) }
func (c *stepClock) advance(ns int64) { c.now.Add(ns) }

// latRec records every latency the observer counts, as stage/kind/ns.
type latRec struct {
	mu  sync.Mutex
	got []string
}

func (r *latRec) observe(s LatencyStage, k IPIKind, ns int64) {
	r.mu.Lock()
	r.got = append(r.got, fmt.Sprintf("%s/%s/%d", s, k, ns))
	r.mu.Unlock()
}

func (r *latRec) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.got
	r.got = nil
	return g
}

func sameList(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: observed %v, want %v", what, got, want)
	}
}

// x2apicBus is two enabled x2APIC LAPICs observed by o.
func x2apicBus(t *testing.T, c vlapic.Clock, avic bool, o *Observer) *vlapic.Bus {
	t.Helper()
	b := vlapic.NewBus(2, c, nil, vlapic.Options{X2APIC: true, AVIC: avic, Observer: o})
	for i := range 2 {
		a := b.LAPIC(i)
		if err := a.SetBase(a.Base() | vlapic.BaseEXTD); err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegSVR), 0x1FF); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// observedBus is x2apicBus observed by an Observer whose latencies go to
// the returned recorder.
func observedBus(t *testing.T, avic bool) (*vlapic.Bus, *Observer, *stepClock, *latRec) {
	t.Helper()
	c, r := &stepClock{}, &latRec{}
	o := NewObserver(NewVM(2), c)
	o.observe = r.observe
	return x2apicBus(t, c, avic, o), o, c, r
}

func icr(t *testing.T, a *vlapic.LAPIC, v uint64) {
	t.Helper()
	if _, err := a.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegICR), v); err != nil {
		t.Fatal(err)
	}
}

// TestIPILatencyStages: an IPI is observed from its send, with its kind,
// when the target accepts it, when the target acknowledges it and when it
// ends it; two sends of one vector before the acknowledgement coalesce and
// keep the first one's time; an injection taken back keeps its trace;
// INIT forgets traces. On the plain path and the AVIC one alike.
func TestIPILatencyStages(t *testing.T) {
	for _, avic := range []bool{false, true} {
		t.Run(fmt.Sprint("avic=", avic), func(t *testing.T) {
			b, o, c, r := observedBus(t, avic)
			src, dst := b.LAPIC(0), b.LAPIC(1)
			c.now.Store(1000)
			icr(t, src, 1<<32|0x51)
			sameList(t, "send", r.take(), "accepted/x2apic_physical/0")
			c.advance(130)
			icr(t, src, 1<<32|0x51)
			sameList(t, "second send", r.take(), "accepted/x2apic_physical/0")
			c.advance(70) // 1200
			if ack := dst.AcknowledgePV(); !ack.OK || ack.Vector != 0x51 {
				t.Fatalf("acknowledge: %+v", ack)
			}
			sameList(t, "injection (coalesced: the first send's time)", r.take(), "injected/x2apic_physical/200")
			dst.Unacknowledge(0x51)
			c.advance(50)
			dst.AcknowledgePV()
			sameList(t, "injected again after a withdrawal", r.take(), "injected/x2apic_physical/250")
			c.advance(750)
			if _, err := dst.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegEOI), 0); err != nil {
				t.Fatal(err)
			}
			sameList(t, "EOI", r.take(), "ended/x2apic_physical/1000")
			if _, err := dst.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegEOI), 0); err != nil {
				t.Fatal(err)
			}
			sameList(t, "an EOI with nothing in service", r.take())

			// A self-IPI by shorthand is of kind self.
			icr(t, src, 1<<18|0x52)
			sameList(t, "self", r.take(), "accepted/self/0")

			// INIT empties IRR: the pending trace must not survive.
			icr(t, src, 1<<32|0x53)
			r.take()
			dst.InitReset()
			if _, err := dst.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegSVR), 0x1FF); err != nil {
				t.Fatal(err)
			}
			c.advance(10)
			icr(t, src, 1<<32|0x53)
			c.advance(5)
			dst.AcknowledgePV()
			sameList(t, "after INIT", r.take(), "accepted/x2apic_physical/0", "injected/x2apic_physical/5")

			// A trace made for another sender (PV send-IPI) is observed
			// likewise; an untraced message (a device's) is not.
			tr := o.Trace(IPIParavirt)
			c.advance(20)
			b.Deliver(vlapic.Message{Vector: 0x60, Delivery: vlapic.Fixed, Dest: 1, Assert: true, Source: 0, Trace: tr})
			b.Deliver(vlapic.Message{Vector: 0x61, Delivery: vlapic.Fixed, Dest: 1, Assert: true, Source: -1})
			sameList(t, "PV trace, device untraced", r.take(), "accepted/pv/20")
		})
	}
}

// TestObserverCounts: the observer counts an ICR write's IPI by kind with
// its targets, charges the EOI write that ends it (not a PV EOI) and the
// exits the vCPU reports for it, and puts its latencies in the VM's
// histograms.
func TestObserverCounts(t *testing.T) {
	c := &stepClock{}
	vm := NewVM(2)
	o := NewObserver(vm, c)
	b := x2apicBus(t, c, false, o)
	icr(t, b.LAPIC(0), 1<<32|0x51)
	o.ExitFor(1, 0x51, vlapic.ExitKick)
	o.ExitFor(1, 0x40, vlapic.ExitHLT) // nothing traced requested 0x40
	b.LAPIC(1).AcknowledgePV()
	o.Injected(1, 0x51)
	if _, err := b.LAPIC(1).WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegEOI), 0); err != nil {
		t.Fatal(err)
	}
	icr(t, b.LAPIC(0), 1<<32|0x52)
	b.LAPIC(1).AcknowledgePV()
	b.LAPIC(1).EOI() // a PV EOI: no exit to charge
	s0, s1 := vm.CPUs[0].Snapshot(), vm.CPUs[1].Snapshot()
	if s0.IPISent[IPIX2APICPhysical] != 2 || s0.IPIDelivered[IPIX2APICPhysical] != 2 {
		t.Errorf("sent %d, delivered %d, want 2 and 2", s0.IPISent[IPIX2APICPhysical], s0.IPIDelivered[IPIX2APICPhysical])
	}
	if s1.IPIRecvExits[IPIX2APICPhysical] != 2 || s1.IPIRecvKick != 1 || s1.IPIRecvEOI != 1 || s1.Injected != 1 {
		t.Errorf("receiver: %d exits charged (%d kick, %d EOI), %d injected; want 2 (1, 1), 1",
			s1.IPIRecvExits[IPIX2APICPhysical], s1.IPIRecvKick, s1.IPIRecvEOI, s1.Injected)
	}
	rs := vm.Latency.Report()
	if len(rs) != 3 {
		t.Fatalf("latency report %+v, want the three stages of x2apic_physical", rs)
	}
	for _, l := range rs {
		if l.Kind != IPIX2APICPhysical.String() || l.Count != 2 {
			t.Errorf("latency %+v, want 2 of x2apic_physical", l)
		}
	}
}

// TestKindOf: each way of naming a destination is its own kind.
func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		m    vlapic.Message
		x2   bool
		want IPIKind
	}{
		{vlapic.Message{Dest: 3}, false, IPIXAPICPhysical},
		{vlapic.Message{Dest: 3, DestMode: vlapic.Logical}, false, IPIXAPICLogical},
		{vlapic.Message{Dest: 3}, true, IPIX2APICPhysical},
		{vlapic.Message{Dest: 3, DestMode: vlapic.Logical}, true, IPIX2APICLogical},
		{vlapic.Message{Dest: 0xFF}, false, IPIBroadcast},
		{vlapic.Message{Dest: 0xFFFFFFFF}, true, IPIBroadcast},
		{vlapic.Message{Shorthand: vlapic.Self}, true, IPISelf},
		{vlapic.Message{Shorthand: vlapic.AllIncludingSelf}, false, IPIAllIncludingSelf},
		{vlapic.Message{Shorthand: vlapic.AllExcludingSelf}, true, IPIAllExcludingSelf},
	} {
		if got := KindOf(c.m, c.x2); got != c.want {
			t.Errorf("KindOf(%+v, x2=%v) = %v, want %v", c.m, c.x2, got, c.want)
		}
	}
}

// TestObserverTSCClock: given govmm's TSC clock, the observer reads it
// directly (no interface: package tscclock says why) and its stamps and
// latencies come out as with any clock.
func TestObserverTSCClock(t *testing.T) {
	vm := NewVM(2)
	o := NewObserver(vm, tscclock.New(1e9))
	if o.clock != nil {
		t.Fatal("the TSC clock is held as an interface")
	}
	tr := o.Sending(0, vlapic.Message{Vector: 0x40, Delivery: vlapic.Fixed, Dest: 1}, true)
	if at := traceAt(tr); at < 0 || traceKind(tr) != IPIX2APICPhysical {
		t.Fatalf("trace at %d kind %v", at, traceKind(tr))
	}
	o.Accepted(1, 0x40, tr)
	var n uint64
	for i := range vm.Latency[IPIX2APICPhysical][LatencyAccepted].Buckets {
		n += vm.Latency[IPIX2APICPhysical][LatencyAccepted].Buckets[i].Load()
	}
	if n != 1 {
		t.Fatalf("%d accepted latencies observed, want 1", n)
	}
}
