package ipicost

import "testing"

// TestICRs checks the ICR writes ipi.elf makes for a multicast to APIC IDs
// 1..N, the fewest any set of N needs, and the sender's minimum, against
// docs/apic-reference.md's rules.
func TestICRs(t *testing.T) {
	for _, c := range []struct {
		mode        string
		dests       int
		icrs, least int
		sender      float64
	}{
		{"xapic-phys", 4, 4, 4, 12},
		{"xapic-flat", 7, 1, 1, 3},
		{"xapic-cluster", 3, 1, 1, 3},
		{"xapic-cluster", 4, 2, 1, 3},   // IDs 1..4: clusters 0 and 1
		{"xapic-cluster", 32, 9, 8, 24}, // IDs 1..32: clusters 0..8
		{"x2apic-phys", 64, 64, 64, 64},
		{"x2apic-cluster", 15, 1, 1, 1},
		{"x2apic-cluster", 16, 2, 1, 1},
		{"x2apic-cluster", 64, 5, 4, 4},
		{"x2apic-cluster", 1023, 64, 64, 64},
		{"pv", 1023, 1, 1, 1},
	} {
		if got := ICRs(c.mode, c.dests); got != c.icrs {
			t.Errorf("%s to %d: ipi.elf makes %d ICR writes, want %d", c.mode, c.dests, got, c.icrs)
		}
		if got := MinICRs(c.mode, c.dests); got != c.least {
			t.Errorf("%s to %d: minimum %d ICR writes, want %d", c.mode, c.dests, got, c.least)
		}
		if got := SenderMin(c.mode, c.dests); got != c.sender {
			t.Errorf("%s to %d: sender minimum %v, want %v", c.mode, c.dests, got, c.sender)
		}
	}
	for _, m := range Modes {
		if ICRs(m, 1) != 1 || MinICRs(m, 1) != 1 {
			t.Errorf("%s: a unicast takes %d ICR writes (minimum %d), want 1", m, ICRs(m, 1), MinICRs(m, 1))
		}
	}
}

// TestMembers: the xAPIC logical modes address fewer APs than there are.
func TestMembers(t *testing.T) {
	for _, c := range []struct {
		mode       string
		cpus, want int
	}{
		{"xapic-flat", 65, 7}, {"xapic-flat", 4, 3}, {"xapic-cluster", 65, 59}, {"x2apic-cluster", 1024, 1023}, {"pv", 2, 1},
	} {
		if got := Members(c.mode, c.cpus); got != c.want {
			t.Errorf("%s on %d vCPUs: %d members, want %d", c.mode, c.cpus, got, c.want)
		}
	}
	if ReceiverMin(true) != 1 || ReceiverMin(false) != 2 {
		t.Errorf("receiver minimum %v with PV EOI, %v without; want 1 and 2", ReceiverMin(true), ReceiverMin(false))
	}
}
