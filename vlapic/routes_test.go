// Tests of destination matching, routing-table updates and lowest-priority
// arbitration, checked by which LAPICs got the IRR bit.

package vlapic

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func xapicLDR(t *testing.T, b *testBus, dfr uint32, ldrs ...uint32) {
	t.Helper()
	for i, l := range ldrs {
		wr(t, b.LAPIC(i), RegDFR, dfr)
		wr(t, b.LAPIC(i), RegLDR, l<<24)
	}
}

func TestDestinationMatch(t *testing.T) {
	all := func(n int, except ...int) []int {
		var c []int
		for i := range n {
			if !slices.Contains(except, i) {
				c = append(c, i)
			}
		}
		return c
	}
	flat := func(t *testing.T, b *testBus) { xapicLDR(t, b, 0xFFFFFFFF, 1, 2, 4, 8) }
	cluster := func(t *testing.T, b *testBus) { xapicLDR(t, b, 0x0FFFFFFF, 0x11, 0x12, 0x21, 0x24) }
	mixed := func(t *testing.T, b *testBus) {
		if err := b.LAPIC(0).SetBase(b.LAPIC(0).Base() | BaseEXTD); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		n     int
		x2    bool
		setup func(*testing.T, *testBus)
		msg   Message
		want  []int
	}{
		{"xapic phys", 4, false, nil, fixed(0x40, Physical, 2), []int{2}},
		{"xapic phys absent", 4, false, nil, fixed(0x40, Physical, 9), nil},
		{"xapic phys broadcast", 4, false, nil, fixed(0x40, Physical, 0xFF), all(4)},
		{"xapic flat one", 4, false, flat, fixed(0x40, Logical, 0x08), []int{3}},
		{"xapic flat multi", 4, false, flat, fixed(0x40, Logical, 0x05), []int{0, 2}},
		{"xapic flat none", 4, false, flat, fixed(0x40, Logical, 0x30), nil},
		{"xapic flat broadcast", 4, false, flat, fixed(0x40, Logical, 0xFF), all(4)},
		{"xapic logical unset LDR", 4, false, nil, fixed(0x40, Logical, 0x01), nil},
		{"xapic cluster 1", 4, false, cluster, fixed(0x40, Logical, 0x13), []int{0, 1}},
		{"xapic cluster 2", 4, false, cluster, fixed(0x40, Logical, 0x25), []int{2, 3}},
		{"xapic cluster 2 one", 4, false, cluster, fixed(0x40, Logical, 0x24), []int{3}},
		{"xapic cluster absent", 4, false, cluster, fixed(0x40, Logical, 0x31), nil},
		{"xapic cluster F all clusters", 4, false, cluster, fixed(0x40, Logical, 0xF1), []int{0, 2}},
		{"xapic cluster broadcast", 4, false, cluster, fixed(0x40, Logical, 0xFF), all(4)},
		{"x2 phys", 40, true, nil, fixed(0x40, Physical, 33), []int{33}},
		{"x2 phys 0xFF is an ID", 40, true, nil, fixed(0x40, Physical, 0xFF), nil},
		{"x2 phys broadcast", 40, true, nil, fixed(0x40, Physical, 0xFFFFFFFF), all(40)},
		{"x2 cluster 0", 40, true, nil, fixed(0x40, Logical, 0x0000_8001), []int{0, 15}},
		{"x2 cluster 1", 40, true, nil, fixed(0x40, Logical, 0x0001_0003), []int{16, 17}},
		{"x2 cluster 2 last", 40, true, nil, fixed(0x40, Logical, 0x0002_0080), []int{39}},
		{"x2 cluster beyond", 40, true, nil, fixed(0x40, Logical, 0x0002_0100), nil},
		{"x2 cluster absent", 40, true, nil, fixed(0x40, Logical, 0x0009_0001), nil},
		{"x2 logical broadcast", 40, true, nil, fixed(0x40, Logical, 0xFFFFFFFF), all(40)},
		{"self", 4, false, nil, Message{Vector: 0x40, Shorthand: Self, Source: 1}, []int{1}},
		{"self from device", 4, false, nil, Message{Vector: 0x40, Shorthand: Self, Source: -1}, nil},
		{"all incl self", 4, true, nil, Message{Vector: 0x40, Shorthand: AllIncludingSelf, Source: 1}, all(4)},
		{"all excl self", 4, true, nil, Message{Vector: 0x40, Shorthand: AllExcludingSelf, Source: 1}, all(4, 1)},
		{"all excl self xapic", 4, false, nil, Message{Vector: 0x40, Shorthand: AllExcludingSelf, Source: 3, Dest: 1}, all(4, 3)},
		{"mixed phys xapic", 4, false, mixed, fixed(0x40, Physical, 2), []int{2}},
		{"mixed phys x2", 4, false, mixed, fixed(0x40, Physical, 0), []int{0}},
		{"mixed broadcast 0xFF", 4, false, mixed, fixed(0x40, Physical, 0xFF), []int{1, 2, 3}},
		{"mixed broadcast x2", 4, false, mixed, fixed(0x40, Physical, 0xFFFFFFFF), []int{0}},
		{"mixed x2 cluster", 4, false, mixed, fixed(0x40, Logical, 0x0000_0001), []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBus(t, tc.n, tc.x2)
			if tc.setup != nil {
				tc.setup(t, b)
			}
			got := b.Deliver(tc.msg)
			if cpus := b.withIRR(0x40); !slices.Equal(cpus, tc.want) {
				t.Fatalf("IRR set on %v, want %v", cpus, tc.want)
			}
			if got != len(tc.want) {
				t.Errorf("Deliver = %d, want %d", got, len(tc.want))
			}
			if n := b.sink.take(); !slices.Equal(n, tc.want) {
				t.Errorf("notified %v, want %v", n, tc.want)
			}
		})
	}
}

func TestIDAndLDR(t *testing.T) {
	b := newBus(t, 300, false)
	a := b.LAPIC(17)
	if a.ID() != 17 || rd(t, a, RegID) != 17<<24 {
		t.Fatalf("xAPIC ID %d / %#x", a.ID(), rd(t, a, RegID))
	}
	if b.LAPIC(299).ID() != 299&0xFF {
		t.Fatalf("xAPIC ID of CPU 299 = %d", b.LAPIC(299).ID())
	}
	if err := a.SetBase(a.Base() | BaseEXTD); err != nil {
		t.Fatal(err)
	}
	if a.ID() != 17 || rd(t, a, RegID) != 17 {
		t.Fatalf("x2APIC ID %d", a.ID())
	}
	if ldr := rd(t, a, RegLDR); ldr != 1<<16|1<<1 {
		t.Fatalf("x2APIC LDR %#x", ldr)
	}
	c := b.LAPIC(299)
	if err := c.SetBase(c.Base() | BaseEXTD); err != nil {
		t.Fatal(err)
	}
	if ldr := rd(t, c, RegLDR); ldr != (299>>4)<<16|1<<(299&15) {
		t.Fatalf("x2APIC LDR of 299 %#x", ldr)
	}
	// The xAPIC ID is writable; the x2APIC ID is the CPU index regardless.
	d := b.LAPIC(5)
	wr(t, d, RegID, 0x77<<24)
	if d.ID() != 0x77 {
		t.Fatalf("xAPIC ID after write %#x", d.ID())
	}
	if err := d.SetBase(d.Base() | BaseEXTD); err != nil {
		t.Fatal(err)
	}
	if d.ID() != 5 {
		t.Fatalf("x2APIC ID after xAPIC ID write %d", d.ID())
	}
}

func TestRoutingFollowsChanges(t *testing.T) {
	b := newBus(t, 4, false)
	deliver := func(m Message) []int {
		b.drain()
		b.Deliver(m)
		return b.withIRR(0x40)
	}
	wr(t, b.LAPIC(1), RegID, 7<<24)
	if got := deliver(fixed(0x40, Physical, 7)); !slices.Equal(got, []int{1}) {
		t.Fatalf("new ID: %v", got)
	}
	if got := deliver(fixed(0x40, Physical, 1)); got != nil {
		t.Fatalf("old ID: %v", got)
	}
	// Two LAPICs with one ID both answer (slow path).
	wr(t, b.LAPIC(2), RegID, 7<<24)
	if got := deliver(fixed(0x40, Physical, 7)); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("shared ID: %v", got)
	}
	// LDR then DFR change.
	wr(t, b.LAPIC(3), RegLDR, 0x12<<24)
	if got := deliver(fixed(0x40, Logical, 0x02)); !slices.Equal(got, []int{3}) {
		t.Fatalf("flat: %v", got)
	}
	wr(t, b.LAPIC(3), RegDFR, 0x0FFFFFFF)
	if got := deliver(fixed(0x40, Logical, 0x02)); got != nil {
		t.Fatalf("cluster with flat dest: %v", got)
	}
	if got := deliver(fixed(0x40, Logical, 0x12)); !slices.Equal(got, []int{3}) {
		t.Fatalf("cluster: %v", got)
	}
	// Two LAPICs sharing a flat bit (slow path), one in another model.
	wr(t, b.LAPIC(0), RegLDR, 0x02<<24)
	wr(t, b.LAPIC(1), RegLDR, 0x02<<24)
	if got := deliver(fixed(0x40, Logical, 0x02)); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("shared flat bit: %v", got)
	}
	// A disabled LAPIC drops out of broadcast.
	if err := b.LAPIC(2).SetBase(DefaultBase); err != nil {
		t.Fatal(err)
	}
	if got := deliver(fixed(0x40, Physical, 0xFF)); !slices.Equal(got, []int{0, 1, 3}) {
		t.Fatalf("broadcast with CPU 2 disabled: %v", got)
	}
	// x2APIC mode change moves CPU 3 from ID 3 to its x2APIC ID (also 3).
	a := b.LAPIC(3)
	wr(t, a, RegID, 9<<24)
	if err := a.SetBase(a.Base() | BaseEXTD); err != nil {
		t.Fatal(err)
	}
	if got := deliver(fixed(0x40, Physical, 3)); !slices.Equal(got, []int{3}) {
		t.Fatalf("x2APIC: %v", got)
	}
	if got := deliver(fixed(0x40, Physical, 9)); got != nil {
		t.Fatalf("old xAPIC ID after x2APIC switch: %v", got)
	}
}

// TestTablesAgreeWithMatches checks the routing tables against the slow path
// (matches on every LAPIC) on random configurations.
func TestTablesAgreeWithMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		n := 1 + rng.IntN(40)
		b := newBus(t, n, false)
		kind := iter % 3
		for i := range n {
			a := b.LAPIC(i)
			switch kind {
			case 0: // xAPIC, random IDs and LDRs, one model
				if rng.IntN(3) == 0 {
					wr(t, a, RegID, uint32(rng.IntN(64))<<24)
				}
				if iter%2 == 0 {
					wr(t, a, RegDFR, 0x0FFFFFFF)
				}
				wr(t, a, RegLDR, uint32(rng.IntN(256))<<24)
			case 1: // x2APIC, some disabled
				if rng.IntN(8) == 0 {
					must(t, a.SetBase(DefaultBase))
				} else {
					must(t, a.SetBase(a.Base()|BaseEXTD))
				}
			case 2: // anything
				if rng.IntN(2) == 0 {
					must(t, a.SetBase(a.Base()|BaseEXTD))
				} else if rng.IntN(2) == 0 {
					wr(t, a, RegDFR, uint32(rng.IntN(2))*0xF0000000|0x0FFFFFFF)
					wr(t, a, RegLDR, uint32(rng.IntN(256))<<24)
				}
			}
		}
		for range 50 {
			m := fixed(0x40, DestMode(rng.IntN(2)), rng.Uint32N(80))
			switch rng.IntN(6) {
			case 0:
				m.Dest = 0xFF
			case 1:
				m.Dest = 0xFFFFFFFF
			case 2:
				m.Dest = rng.Uint32N(4)<<16 | rng.Uint32N(0x10000)
			}
			var want []int
			for i := range n {
				if matches(b.lapics[i].key.Load(), i, m.Dest, m.DestMode) && b.LAPIC(i).Mode() != ModeDisabled {
					want = append(want, i)
				}
			}
			var got []int
			b.forTargets(&m, func(a *LAPIC) {
				if a.Mode() != ModeDisabled {
					got = append(got, a.cpu)
				}
			})
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("iter %d kind %d: %+v: tables %v, matches %v", iter, kind, m, got, want)
			}
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestLowestPriority(t *testing.T) {
	b := newBus(t, 4, true)
	for i, tpr := range []uint32{0x20, 0x10, 0x30, 0x10} {
		wr(t, b.LAPIC(i), RegTPR, tpr)
	}
	lp := Message{Vector: 0x80, Delivery: LowestPriority, DestMode: Logical, Dest: 0xF, Source: -1}
	for i, want := range []int{1, 3, 1, 3} {
		if n := b.Deliver(lp); n != 1 {
			t.Fatalf("round %d: accepted by %d", i, n)
		}
		if got := b.withIRR(0x80); !slices.Equal(got, []int{want}) {
			t.Fatalf("round %d: went to %v, want %d", i, got, want)
		}
		if got := b.sink.take(); !slices.Equal(got, []int{want}) {
			t.Fatalf("round %d: notified %v", i, got)
		}
		b.drain()
	}
	// A software-disabled LAPIC does not take part.
	wr(t, b.LAPIC(1), RegSVR, 0xFF)
	wr(t, b.LAPIC(3), RegSVR, 0xFF)
	b.Deliver(lp)
	if got := b.withIRR(0x80); !slices.Equal(got, []int{0}) {
		t.Fatalf("with 1 and 3 disabled: %v", got)
	}
	// Nobody enabled: nobody accepts.
	if n := b.Deliver(Message{Vector: 0x80, Delivery: LowestPriority, Dest: 3, Source: -1}); n != 0 {
		t.Fatalf("LP to disabled CPU accepted by %d", n)
	}
}
