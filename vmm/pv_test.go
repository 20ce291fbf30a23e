package vmm

import (
	"fmt"
	"slices"
	"testing"

	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/pveoi"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/pvsyscall"
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

// Under --lapic=kvm, --pv-eoi and --pv-ipi are KVM's own: their bits go in
// KVM's CPUID leaf (PV EOI, PV send-IPI), govmm's own PV send-IPI bit
// stays clear, and the guest is told its LAPIC is KVM's. On govmm's LAPIC
// KVM's PV send-IPI bit is never shown (its hypercall needs KVM's LAPIC).
func TestPVLeavesOnKVMLAPIC(t *testing.T) {
	units := func(eoi, ipi bool) pvUnits {
		return pvUnits{ipi: pvipi.New(false, nil, nil, nil), doorbell: pvsyscall.New(false, 1), kvmEOI: eoi, kvmIPI: ipi, kvmLAPIC: true}
	}
	l := units(true, true).leaves()
	if l.KVMFeatures&hvcpuid.KVMFeaturePVSendIPI == 0 || l.KVMFeatures&pveoi.KVMFeatureEOI == 0 {
		t.Errorf("KVM's leaf %#x lacks PV send-IPI or PV EOI", l.KVMFeatures)
	}
	if l.Features&hvcpuid.FeatureKVMLAPIC == 0 || l.Features&pvipi.FeatureSendIPI != 0 {
		t.Errorf("govmm's leaf %#x: want the KVM-LAPIC bit and not govmm's PV send-IPI", l.Features)
	}
	if l := units(false, false).leaves(); l.KVMFeatures&(hvcpuid.KVMFeaturePVSendIPI|pveoi.KVMFeatureEOI) != 0 {
		t.Errorf("without --pv-ipi and --pv-eoi KVM's leaf shows %#x", l.KVMFeatures)
	}
}
