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
