package vlapic

import (
	"reflect"
	"testing"
)

// TakePending is TakeEvents and PendingVector at one look.
func TestTakePending(t *testing.T) {
	for _, avic := range []bool{false, true} {
		var b *testBus
		if avic {
			b = avicBus(t, 2)
		} else {
			b = newBus(t, 2, true)
		}
		a := b.LAPIC(1)
		if p := a.TakePending(); p != (Pending{}) || p.Work() || p.Wakes(true) {
			t.Fatalf("avic=%v: idle LAPIC: %+v", avic, p)
		}
		// A fixed vector (posted to the backing page with AVIC: folded).
		b.Deliver(fixed(0x41, Physical, 1))
		b.Deliver(fixed(0x62, Physical, 1))
		p := a.TakePending()
		if p != (Pending{Vector: 0x62, Fixed: true, Requested: true}) || !p.Work() || !p.Wakes(true) || p.Wakes(false) {
			t.Fatalf("avic=%v: two vectors: %+v", avic, p)
		}
		// Taking events leaves IRR alone: the vector is still there.
		if p2 := a.TakePending(); p2 != p {
			t.Fatalf("avic=%v: second look %+v, want %+v", avic, p2, p)
		}
		// In service, 0x62 masks 0x41 (same PPR rule as PendingVector).
		if v, ok := a.Acknowledge(); !ok || v != 0x62 {
			t.Fatalf("avic=%v: acknowledge %#x %v", avic, v, ok)
		}
		// Held back, it is still requested (a PV EOI offer may not stand).
		if p := a.TakePending(); p.Fixed || !p.Requested {
			t.Fatalf("avic=%v: 0x41 shown above PPR 0x60, or not requested: %+v", avic, p)
		}
		a.EOI()
		if p := a.TakePending(); p != (Pending{Vector: 0x41, Fixed: true, Requested: true}) {
			t.Fatalf("avic=%v: after EOI %+v", avic, p)
		}
		if v, _ := a.Acknowledge(); v != 0x41 {
			t.Fatalf("avic=%v: acknowledge %#x", avic, v)
		}
		a.EOI()
		// NMI, INIT and SIPI are latched events, taken once.
		b.Deliver(Message{Delivery: NMI, Dest: 1, Source: -1})
		p = a.TakePending()
		if p != (Pending{Events: Events{NMIs: 1}}) || !p.Work() || !p.Wakes(false) {
			t.Fatalf("avic=%v: NMI: %+v", avic, p)
		}
		b.Deliver(Message{Delivery: INIT, Dest: 1, Source: -1})
		b.Deliver(Message{Delivery: StartUp, Vector: 0x9A, Dest: 1, Source: -1})
		p = a.TakePending()
		if p != (Pending{Events: Events{INIT: true, SIPI: true, SIPIVector: 0x9A, INITFrom: -1}}) || !p.Work() || !p.Wakes(false) {
			t.Fatalf("avic=%v: INIT+SIPI: %+v", avic, p)
		}
		if p := a.TakePending(); p != (Pending{}) {
			t.Fatalf("avic=%v: events taken twice: %+v", avic, p)
		}
		// A SIPI alone does not end a HLT.
		b.Deliver(Message{Delivery: StartUp, Vector: 0x10, Dest: 1, Source: -1})
		if p := a.TakePending(); !p.Work() || p.Wakes(true) || p.SIPIVector != 0x10 {
			t.Fatalf("avic=%v: SIPI: %+v", avic, p)
		}
	}
}

// Events.None is e == Events{}: every field set alone makes it false, so a
// field added to Events without a term in None fails here.
func TestEventsNone(t *testing.T) {
	var zero Events
	if !zero.None() {
		t.Fatal("Events{}.None() = false")
	}
	typ := reflect.TypeOf(zero)
	for i := range typ.NumField() {
		var e Events
		f := reflect.ValueOf(&e).Elem().Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(1)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(-1)
		default:
			t.Fatalf("Events.%s is a %v: teach this test (and None) its non-zero value", typ.Field(i).Name, f.Kind())
		}
		if e.None() {
			t.Errorf("Events with only %s set: None() = true", typ.Field(i).Name)
		}
	}
}
