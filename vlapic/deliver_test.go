package vlapic

import "testing"

// TestDeliverObserved: the observer hears every LAPIC that accepted, by
// CPU, for fixed and lowest-priority delivery, and none that did not.
func TestDeliverObserved(t *testing.T) {
	b := newBus(t, 4, true)
	var got []int
	seen := func(cpu int) { got = append(got, cpu) }
	// Logical x2APIC cluster 0, CPUs 1 and 3 (LDR bits 1 and 3).
	m := Message{Vector: 0x41, Delivery: Fixed, DestMode: Logical, Dest: 0b1010, Source: -1}
	if n := b.DeliverObserved(m, seen); n != 2 || len(got) != 2 || got[0]+got[1] != 4 {
		t.Errorf("fixed to cluster 0 {1,3}: accepted %d, observed %v; want 2, CPUs 1 and 3", n, got)
	}
	got = nil
	m.Delivery, m.Vector = LowestPriority, 0x42
	if n := b.DeliverObserved(m, seen); n != 1 || len(got) != 1 || (got[0] != 1 && got[0] != 3) {
		t.Errorf("lowest priority to {1,3}: accepted %d, observed %v; want one of 1, 3", n, got)
	}
	got = nil
	m = Message{Vector: 0x43, Delivery: Fixed, DestMode: Physical, Dest: 9, Source: -1}
	if n := b.DeliverObserved(m, seen); n != 0 || len(got) != 0 {
		t.Errorf("to absent APIC ID 9: accepted %d, observed %v; want none", n, got)
	}
}
