package kvm

import (
	"sync/atomic"
	"testing"
)

// fill appends writes to the ring as KVM does: the entry, then last.
func fill(r CoalescedRing, addrs ...uint64) {
	for _, a := range addrs {
		last := atomic.LoadUint32(&r.head.Last)
		r.entries[last] = CoalescedWrite{PhysAddr: a, Len: 4, Data: [8]byte{byte(a)}}
		atomic.StoreUint32(&r.head.Last, (last+1)%CoalescedRingEntries)
	}
}

// TestCoalescedRingDrain: writes come out oldest first, across the ring's
// wrap, each once, and first is handed back so KVM can reuse the entries.
func TestCoalescedRingDrain(t *testing.T) {
	page := make([]byte, 4096)
	r := ringAt(page)
	var got []uint64
	take := func(w CoalescedWrite) { got = append(got, w.PhysAddr) }
	if n := r.Drain(take); n != 0 {
		t.Fatalf("empty ring drained %d", n)
	}
	var want []uint64
	for round := range 3 { // 3 x 100 writes: the ring of 170 wraps
		var batch []uint64
		for i := range 100 {
			batch = append(batch, uint64(round*100+i))
		}
		fill(r, batch...)
		if n := r.Drain(take); n != 100 {
			t.Fatalf("round %d drained %d, want 100", round, n)
		}
		want = append(want, batch...)
	}
	if len(got) != len(want) {
		t.Fatalf("drained %d writes, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("write %d is %d, want %d (order lost)", i, got[i], want[i])
		}
	}
	if f, l := atomic.LoadUint32(&r.head.First), atomic.LoadUint32(&r.head.Last); f != l || f != 300%CoalescedRingEntries {
		t.Errorf("first %d last %d after draining 300, want both %d", f, l, 300%CoalescedRingEntries)
	}
	var zero CoalescedRing
	if zero.Drain(take) != 0 {
		t.Error("a ring that is not mapped drained something")
	}
}
