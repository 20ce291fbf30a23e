package hvcpuid

import (
	"testing"

	"github.com/govmm/govmm/kvm"
)

// What govmm's leaves looked like before the PV units filled them in
// (vmm/cpuid.go): KVM's feature leaf rewritten in place, then signature
// (EAX the highest leaf), features, the doorbell leaf.
func TestApply(t *testing.T) {
	l := Leaves{KVMFeatures: 1 << 6, Features: 3, More: []kvm.CPUIDEntry{{Function: 0x40000102, EAX: 0xFEB00000}}}
	table := l.Apply([]kvm.CPUIDEntry{{Function: KVMSignature, EAX: 0x40000001, EBX: 0x4b4d564b}, {Function: KVMFeatures, EAX: ^uint32(0), EDX: 7}, {Function: 1}})
	want := []kvm.CPUIDEntry{
		{Function: KVMSignature, EAX: 0x40000001, EBX: 0x4b4d564b},
		{Function: KVMFeatures, EAX: 1<<3 | 1<<24 | 1<<6},
		{Function: 1},
		{Function: Base, EAX: 0x40000102, EBX: 0x6d766f47, ECX: 0x766f476d, EDX: 0x6f476d6d},
		{Function: Features, EAX: 3},
		{Function: 0x40000102, EAX: 0xFEB00000},
	}
	if len(table) != len(want) {
		t.Fatalf("%d leaves, want %d: %+v", len(table), len(want), table)
	}
	for i := range want {
		if table[i] != want[i] {
			t.Errorf("leaf %d: %+v, want %+v", i, table[i], want[i])
		}
	}
}
