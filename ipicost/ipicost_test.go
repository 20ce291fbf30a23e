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
		if got := ICRs(c.mode, 1, c.dests); got != c.icrs {
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
		if ICRs(m, 1, 1) != 1 || MinICRs(m, 1) != 1 {
			t.Errorf("%s: a unicast takes %d ICR writes (minimum %d), want 1", m, ICRs(m, 1, 1), MinICRs(m, 1))
		}
	}
}

// TestAligned: with aligned=1 the multicast set starts at cluster 1, and
// every set size then takes exactly the cluster-aligned minimum; by
// default (from APIC ID 1) a set that reaches a cluster boundary takes one
// ICR write more. Modes without clusters start at 1 either way.
func TestAligned(t *testing.T) {
	for _, c := range []struct {
		mode               string
		first, dests, icrs int
	}{
		{"xapic-cluster", 4, 4, 1}, {"xapic-cluster", 4, 5, 2}, {"xapic-cluster", 4, 32, 8},
		{"x2apic-cluster", 16, 15, 1}, {"x2apic-cluster", 16, 16, 1}, {"x2apic-cluster", 16, 17, 2},
		{"x2apic-cluster", 16, 64, 4}, {"x2apic-cluster", 17, 16, 2},
	} {
		if got := ICRs(c.mode, c.first, c.dests); got != c.icrs {
			t.Errorf("%s to APIC IDs %d..%d: %d ICR writes, want %d", c.mode, c.first, c.first+c.dests-1, got, c.icrs)
		}
	}
	for _, m := range Modes {
		size := ClusterSize(m)
		if size == 0 {
			if First(m, true) != 1 || First(m, false) != 1 {
				t.Errorf("%s has no clusters but starts at %d aligned, %d not", m, First(m, true), First(m, false))
			}
			continue
		}
		if First(m, true) != size || First(m, false) != 1 {
			t.Errorf("%s: first APIC ID %d aligned, %d not; want %d and 1", m, First(m, true), First(m, false), size)
		}
		for d := 1; d <= 200; d++ {
			if got, least := ICRs(m, First(m, true), d), MinICRs(m, d); got != least {
				t.Errorf("%s aligned to %d: %d ICR writes, minimum %d", m, d, got, least)
			}
			if d%size == 0 && ICRs(m, 1, d) != MinICRs(m, d)+1 {
				t.Errorf("%s from ID 1 to %d: %d ICR writes, want one above the minimum %d", m, d, ICRs(m, 1, d), MinICRs(m, d))
			}
		}
	}
	for _, c := range []struct {
		mode               string
		cpus, first, dests int
		fits               bool
	}{
		{"xapic-cluster", 65, 4, 56, true}, {"xapic-cluster", 65, 4, 57, false},
		{"x2apic-cluster", 65, 16, 49, true}, {"x2apic-cluster", 65, 16, 50, false},
		{"x2apic-cluster", 81, 16, 64, true}, {"x2apic-phys", 65, 1, 64, true},
	} {
		if got := Fits(c.mode, c.cpus, c.first, c.dests); got != c.fits {
			t.Errorf("%s on %d vCPUs, IDs %d..%d: fits %v, want %v", c.mode, c.cpus, c.first, c.first+c.dests-1, got, c.fits)
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
