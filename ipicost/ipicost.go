// Package ipicost is the exit cost model of an IPI in each APIC destination
// mode, as the bare-metal guest ipi.elf sends them (guest/baremetal/ipi.c;
// the rules in docs/apic-reference.md): which APs a mode can address, how
// many ICR writes one IPI takes, how many exits each write costs the
// sender, and the fewest exits sender and receiver can get away with.
// 'govmm bench-ipi' measures against it and the IPI tests expect it
// exactly; it is written here once so that both agree.
package ipicost

import "strings"

// Modes are ipi.elf's destination modes (its mode=).
var Modes = []string{"xapic-phys", "xapic-flat", "xapic-cluster", "x2apic-phys", "x2apic-cluster", "pv"}

// X2APIC says whether mode runs the LAPICs in x2APIC mode: the x2APIC
// modes, and PV, whose send-IPI MSR names x2APIC IDs.
func X2APIC(mode string) bool { return strings.HasPrefix(mode, "x2apic") || mode == "pv" }

// Members is how many APs ipi.elf can address in mode on cpus vCPUs: all
// but the BSP, except in xAPIC logical modes (8 flat bits; 15 clusters of
// 4).
func Members(mode string, cpus int) int {
	switch mode {
	case "xapic-flat":
		return min(cpus, 8) - 1
	case "xapic-cluster":
		return min(cpus, 60) - 1
	}
	return cpus - 1
}

// MemberRule says why Members stops where it does.
func MemberRule(mode string) string {
	switch mode {
	case "xapic-flat":
		return "flat logical IDs are 8 bits, one per CPU"
	case "xapic-cluster":
		return "xAPIC logical cluster: 15 clusters of 4, the BSP in cluster 0"
	}
	return "one per AP"
}

// ExitsPerICR is the sender's exits per ICR write: xAPIC reads ICR
// (idle), writes ICR2 and ICR; x2APIC and the PV MSR take one WRMSR.
func ExitsPerICR(mode string) int {
	if strings.HasPrefix(mode, "xapic") {
		return 3
	}
	return 1
}

// ClusterSize is the logical cluster width of a mode (0: not clustered).
func ClusterSize(mode string) int {
	switch mode {
	case "xapic-cluster":
		return 4
	case "x2apic-cluster":
		return 16
	}
	return 0
}

// First is the first APIC ID of ipi.elf's multicast set (its dests=N
// goes to APIC IDs First .. First+N-1). By default it is 1, the first AP,
// so in cluster modes the set straddles cluster 0, which holds the BSP;
// aligned (ipi.elf aligned=1, 'govmm bench-ipi --aligned') starts it at
// cluster 1 instead, so that N CPUs take the cluster-aligned minimum of
// ICR writes. Modes without clusters start at 1 either way.
func First(mode string, aligned bool) int {
	if aligned && ClusterSize(mode) > 0 {
		return ClusterSize(mode)
	}
	return 1
}

// Fits says whether APIC IDs first .. first+dests-1 are all members on
// cpus vCPUs (members are APIC IDs 1 .. Members).
func Fits(mode string, cpus, first, dests int) bool {
	return first+dests-1 <= Members(mode, cpus)
}

// ICRs is how many ICR writes ipi.elf makes for one IPI to APIC IDs
// first .. first+dests-1: one per cluster the set touches in cluster
// modes, one per destination in physical modes.
func ICRs(mode string, first, dests int) int {
	switch {
	case dests == 0:
		return 0
	case mode == "pv" || mode == "xapic-flat":
		return 1
	case ClusterSize(mode) > 0:
		size := ClusterSize(mode)
		return (first+dests-1)/size - first/size + 1 // clusters touched
	}
	return dests
}

// MinICRs is the fewest ICR writes any destination set of that size
// needs: a cluster-aligned set in cluster modes.
func MinICRs(mode string, dests int) int {
	switch {
	case dests == 0:
		return 0
	case mode == "pv":
		return (dests-1)/4096 + 1 // one WRMSR per 4096-APIC-ID window
	case mode == "xapic-flat":
		return 1
	case ClusterSize(mode) > 0:
		return (dests + ClusterSize(mode) - 1) / ClusterSize(mode)
	}
	return dests
}

// SenderMin is the fewest exits the sender takes for one IPI to dests
// CPUs (1 for a unicast).
func SenderMin(mode string, dests int) float64 {
	return float64(ExitsPerICR(mode) * MinICRs(mode, dests))
}

// ReceiverMin is the fewest exits a halted receiver takes per IPI: the HLT
// it wakes from, and its EOI unless the guest ends interrupts with PV EOI.
func ReceiverMin(pvEOI bool) float64 {
	if pvEOI {
		return 1
	}
	return 2
}

// Summary is the model in prose, for reports.
const Summary = `Minimum (docs/apic-reference.md, from the guest code): sender, per ICR
write, 3 exits in xAPIC (ICR idle read, ICR2, ICR) and 1 WRMSR in x2APIC;
ICR writes per IPI: physical N, xAPIC flat 1, xAPIC cluster ceil(N/4),
x2APIC cluster ceil(N/16), PV 1 (govmm's send-IPI MSR covers 4096 APIC IDs).
Receiver: 1 EOI exit (0 with PV EOI) + 1 HLT per wake.`
