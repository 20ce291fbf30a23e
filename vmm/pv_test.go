package vmm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/govmm/govmm/kvm"
)

// The MSR filter built from the bus denies exactly the MSRs govmm's
// hand-written filter denied before the exit bus (setupKVM until then:
// TSC deadline, APIC_BASE, PV send-IPI, KVM's PV EOI, SYSCALL entry, one
// MSR a range, reads and writes), and the host probe checks the same MSRs
// under the same names.
func TestMSRFilterFromBus(t *testing.T) {
	deny := func(msr uint32) kvm.MSRRange {
		return kvm.MSRRange{Base: msr, Allow: []bool{false}, Read: true, Write: true}
	}
	before := []kvm.MSRRange{deny(0x6E0), deny(0x1B), deny(0x4D564F50), deny(0x4B564D04), deny(0x4D564F51)}
	got := msrFilter(msrBus())
	show := func(rs []kvm.MSRRange) (out []string) {
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%#x+%d deny r=%v w=%v", r.Base, len(r.Allow), r.Read, r.Write))
		}
		return out
	}
	t.Logf("hand-written filter: %v", show(before))
	t.Logf("filter from the bus: %v", show(got))
	cmp := func(a, b kvm.MSRRange) int { return int(a.Base) - int(b.Base) }
	slices.SortFunc(before, cmp)
	if !slices.EqualFunc(got, before, func(a, b kvm.MSRRange) bool {
		return a.Base == b.Base && slices.Equal(a.Allow, b.Allow) && a.Read == b.Read && a.Write == b.Write
	}) {
		t.Errorf("filter from the bus differs from the hand-written one")
	}
	claimed := map[string]uint32{}
	for _, c := range claimedMSRs() {
		claimed[c.Name] = c.Index
	}
	want := map[string]uint32{"APIC_BASE": 0x1B, "PV_SEND_IPI": 0x4D564F50, "KVM_PV_EOI": 0x4B564D04, "SYSCALL_ENTRY": 0x4D564F51}
	if len(claimed) != len(want) {
		t.Errorf("claimed %v, want %v", claimed, want)
	}
	for n, i := range want {
		if claimed[n] != i {
			t.Errorf("claimed %s = %#x, want %#x", n, claimed[n], i)
		}
	}
}
