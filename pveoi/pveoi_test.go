package pveoi

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
)

type lapic struct{ eois int }

func (l *lapic) EOI() { l.eois++ }

func newUnit(t *testing.T, enabled bool) (*Unit, []byte, *lapic, *atomic.Uint64, *exitbus.Bus) {
	m, err := memory.New(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	mem, _ := m.Slice(0, 0x2000)
	l := &lapic{}
	n := &atomic.Uint64{}
	u := New(enabled, m, []LAPIC{l}, []*atomic.Uint64{n})
	var b exitbus.Bus
	if err := u.Register(&b); err != nil {
		panic(err)
	}
	return u, mem, l, n, &b
}

func wrmsr(b *exitbus.Bus, v uint64) error {
	r, base := b.Lookup(0, exitbus.MSR, MSR)
	var a exitbus.Access
	a.Reset(0, MSR, base, true, nil)
	a.Value = v
	return r.Handler.Access(&a)
}

func rdmsr(b *exitbus.Bus) (uint64, error) {
	r, base := b.Lookup(0, exitbus.MSR, MSR)
	var a exitbus.Access
	a.Reset(0, MSR, base, false, nil)
	err := r.Handler.Access(&a)
	return a.Value, err
}

func TestOffMeansGP(t *testing.T) {
	u, _, _, _, b := newUnit(t, false)
	if err := wrmsr(b, 0x1001); !errors.Is(err, vlapic.ErrGP) {
		t.Errorf("write without the feature: %v", err)
	}
	if _, err := rdmsr(b); !errors.Is(err, vlapic.ErrGP) {
		t.Errorf("read without the feature: %v", err)
	}
	var l hvcpuid.Leaves
	u.CPUID(&l)
	if l.KVMFeatures != 0 {
		t.Errorf("feature bit shown while off")
	}
	if m := b.Map(); len(m) != 1 || !m[0].Filter || m[0].Base != MSR {
		t.Errorf("map %+v", m)
	}
}

func TestOfferAndComplete(t *testing.T) {
	u, mem, l, n, b := newUnit(t, true)
	var leaves hvcpuid.Leaves
	u.CPUID(&leaves)
	if leaves.KVMFeatures != KVMFeatureEOI {
		t.Errorf("KVM features %#x", leaves.KVMFeatures)
	}
	for _, bad := range []uint64{0x1003, 1, 4<<20 | 1} {
		if err := wrmsr(b, bad); !errors.Is(err, vlapic.ErrGP) {
			t.Errorf("WRMSR %#x: %v, want #GP", bad, err)
		}
	}
	if err := wrmsr(b, 0x1001); err != nil {
		t.Fatal(err)
	}
	if v, _ := rdmsr(b); v != 0x1001 {
		t.Errorf("RDMSR %#x", v)
	}
	c := u.CPU(0)
	c.Offer()
	if mem[0x1000]&1 == 0 {
		t.Fatal("offer did not set the guest's bit")
	}
	c.Sync()
	if l.eois != 0 {
		t.Fatal("EOI completed while the guest's bit is set")
	}
	mem[0x1000] = 0 // the guest's EOI
	c.Sync()
	if l.eois != 1 || n.Load() != 1 {
		t.Fatalf("after the guest's PV EOI: %d EOIs, counted %d", l.eois, n.Load())
	}
	// Completed before a nested injection: the bit is taken back, the EOI
	// will be a real one.
	c.Offer()
	c.Complete()
	if mem[0x1000]&1 != 0 || l.eois != 1 {
		t.Errorf("complete with the bit set: bit %d, %d EOIs", mem[0x1000]&1, l.eois)
	}
	// Retract: never in service, no EOI.
	c.Offer()
	c.Retract()
	if mem[0x1000]&1 != 0 || l.eois != 1 {
		t.Errorf("retract: bit %d, %d EOIs", mem[0x1000]&1, l.eois)
	}
	c.Offer()
	c.Reset()
	if v, _ := rdmsr(b); v != 0 {
		t.Errorf("MSR after INIT %#x", v)
	}
	c.Offer()
	c.Sync()
	if l.eois != 1 {
		t.Errorf("offer after INIT took effect")
	}
}
