package vlapic

import "testing"

func TestDecodeMSI(t *testing.T) {
	cases := []struct {
		addr uint64
		data uint32
		ok   bool
		want Message
	}{
		{0xFEE03000, 0x0041, true, Message{Vector: 0x41, Dest: 3, Source: -1, Assert: true}},
		{0xFEE0F004, 0x0155, true, Message{Vector: 0x55, Delivery: LowestPriority, DestMode: Logical, Dest: 0x0F, Source: -1, Assert: true}},
		{0xFEE00000, 0xC061, true, Message{Vector: 0x61, Trigger: Level, Dest: 0, Source: -1, Assert: true}},
		{0xFEE00000, 0x8061, true, Message{Vector: 0x61, Trigger: Level, Dest: 0, Source: -1}},
		// RH with a logical destination: one CPU of the set (lowest priority).
		{0xFEE0F00C, 0x0041, true, Message{Vector: 0x41, Delivery: LowestPriority, DestMode: Logical, Dest: 0x0F, Source: -1, Assert: true}},
		// RH with a physical destination: one CPU already.
		{0xFEE03008, 0x0041, true, Message{Vector: 0x41, Dest: 3, Source: -1, Assert: true}},
		{0xFEE0F00C, 0x0441, true, Message{Vector: 0x41, Delivery: NMI, DestMode: Logical, Dest: 0x0F, Source: -1, Assert: true}},
		{0xFEE00010, 0x0041, false, Message{}}, // remappable format
		{0xFEC00000, 0x0041, false, Message{}}, // not the interrupt range
	}
	for _, c := range cases {
		m, ok := DecodeMSI(c.addr, c.data)
		if ok != c.ok || m != c.want {
			t.Errorf("DecodeMSI(%#x, %#x) = %+v, %v; want %+v, %v", c.addr, c.data, m, ok, c.want, c.ok)
		}
	}
}

// ackPV is AcknowledgePV's vector, OK and PVEOI.
func ackPV(a *LAPIC) (uint8, bool, bool) {
	k := a.AcknowledgePV()
	return k.Vector, k.OK, k.PVEOI
}

func TestAcknowledgePV(t *testing.T) {
	bus := NewBus(1, nil, nil, Options{X2APIC: true})
	a := bus.LAPIC(0)
	a.WriteMMIO(0xF0, []byte{0xFF, 0x01, 0, 0}) // SVR: enable
	bus.Deliver(Message{Vector: 0x40, Dest: 0, Assert: true, Source: -1})
	if v, ok, pv := ackPV(a); !ok || v != 0x40 || !pv {
		t.Fatalf("edge alone: %#x %v %v", v, ok, pv)
	}
	a.EOI()
	bus.Deliver(Message{Vector: 0x50, Dest: 0, Assert: true, Source: -1})
	bus.Deliver(Message{Vector: 0x41, Dest: 0, Assert: true, Source: -1})
	if v, ok, pv := ackPV(a); !ok || v != 0x50 || pv {
		t.Fatalf("with another pending: %#x %v %v", v, ok, pv)
	}
	a.EOI()
	a.EOI() // nothing in service after the first: harmless
	if v, ok, _ := ackPV(a); !ok || v != 0x41 {
		t.Fatalf("second vector: %#x %v", v, ok)
	}
	a.EOI()
	bus.Deliver(Message{Vector: 0x60, Trigger: Level, Dest: 0, Assert: true, Source: -1})
	if v, ok, pv := ackPV(a); !ok || v != 0x60 || pv {
		t.Fatalf("level vector: %#x %v %v", v, ok, pv)
	}
}

// TestUnacknowledge: a withdrawn injection puts the vector back in IRR and
// lowers PPR again; only the vector last acknowledged (highest in service)
// can be withdrawn.
func TestUnacknowledge(t *testing.T) {
	bus := NewBus(1, nil, nil, Options{X2APIC: true})
	a := bus.LAPIC(0)
	a.WriteMMIO(0xF0, []byte{0xFF, 0x01, 0, 0}) // SVR: enable
	bus.Deliver(Message{Vector: 0x40, Dest: 0, Assert: true, Source: -1})
	bus.Deliver(Message{Vector: 0x80, Dest: 0, Assert: true, Source: -1})
	if v, ok := a.Acknowledge(); !ok || v != 0x80 {
		t.Fatalf("acknowledge: %#x %v", v, ok)
	}
	if _, ok := a.PendingVector(); ok {
		t.Fatal("0x40 pending while 0x80 is in service")
	}
	a.Unacknowledge(0x40) // not in service: ignored
	a.Unacknowledge(0x80)
	if v, ok := a.PendingVector(); !ok || v != 0x80 {
		t.Fatalf("after withdrawal pending %#x %v, want 0x80 again", v, ok)
	}
	if v, ok := a.Acknowledge(); !ok || v != 0x80 {
		t.Fatalf("re-acknowledge: %#x %v", v, ok)
	}
	a.EOI()
	if v, ok := a.Acknowledge(); !ok || v != 0x40 {
		t.Fatalf("next: %#x %v", v, ok)
	}
	a.EOI()
	if _, ok := a.Acknowledge(); ok {
		t.Fatal("a vector delivered twice")
	}
}

// EncodeCompatMSI is DecodeCompatMSI's inverse: every message a
// compatibility-format MSI can carry (8-bit destination, RH clear, so no
// lowest priority made from a fixed one) comes back as it went in.
func TestEncodeCompatMSI(t *testing.T) {
	for _, m := range []Message{
		{Vector: 0x41, Dest: 1, Assert: true},
		{Vector: 0x61, Dest: 3, DestMode: Logical, Trigger: Level, Assert: true},
		{Vector: 0x62, Dest: 0xFF, Trigger: Level},
		{Vector: 0x30, Dest: 0x45, Delivery: LowestPriority, DestMode: Logical, Assert: true},
		{Delivery: NMI, Dest: 2, Assert: true},
	} {
		m.Source = -1
		addr, data := EncodeCompatMSI(m)
		if got, ok := DecodeMSI(uint64(addr), data); !ok || got != m {
			t.Errorf("%+v: encoded %#x/%#x, decoded %+v (ok %v)", m, addr, data, got, ok)
		}
	}
}
