// This file implements the interrupt command register format (SDM 11.6.1,
// 11.12.9): decoding an ICR value into a Message and back.

package vlapic

// DecodeICR decodes an ICR value: the xAPIC ICR2:ICR pair (destination in
// bits 63:56) or the 64-bit x2APIC ICR (destination in bits 63:32). Source
// is -1; the sender fills it in.
func DecodeICR(icr uint64, x2apic bool) Message {
	m := Message{
		Vector:    uint8(icr),
		Delivery:  DeliveryMode(icr >> 8 & 7),
		DestMode:  DestMode(icr >> 11 & 1),
		Assert:    icr&(1<<14) != 0,
		Trigger:   Trigger(icr >> 15 & 1),
		Shorthand: Shorthand(icr >> 18 & 3),
	}
	// Set apart: in the literal, the constant made the compiler copy the
	// whole Message from a read-only template, a data page of its own
	// (beside the itabs) at every IPI's send (scripts/rtt-pages.sh).
	m.Source = -1
	if x2apic {
		m.Dest = uint32(icr >> 32)
	} else {
		m.Dest = uint32(icr >> 56)
	}
	return m
}

// EncodeICR is the inverse of DecodeICR (Source is not encoded; an xAPIC
// destination keeps its low 8 bits).
func EncodeICR(m Message, x2apic bool) uint64 {
	icr := uint64(m.Vector) | uint64(m.Delivery&7)<<8 | uint64(m.DestMode&1)<<11 |
		uint64(m.Trigger&1)<<15 | uint64(m.Shorthand&3)<<18
	if m.Assert {
		icr |= 1 << 14
	}
	if x2apic {
		return icr | uint64(m.Dest)<<32
	}
	return icr | uint64(m.Dest&0xFF)<<56
}
