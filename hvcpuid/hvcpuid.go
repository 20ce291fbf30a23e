// Package hvcpuid is the hypervisor CPUID range (0x40000000 up) as govmm
// shows it: KVM's leaves (0x40000000 signature, passed through; 0x40000001
// features, rewritten) and govmm's own (0x40000100 signature and highest
// leaf, 0x40000101 feature bits, then leaves of particular features). Each
// paravirtual feature adds its bits and leaves to a Leaves; Apply writes
// them into a vCPU's CPUID table.
//
// govmm's ABI (version 1):
//
//	CPUID 0x40000100: EAX = the highest govmm leaf,
//	                  EBX, ECX, EDX = "GovmmGovmmGo" (the signature)
//	CPUID 0x40000101: EAX = feature bits (package pvipi: bit 0 PV send-IPI;
//	                  package pvsyscall: bit 1 SYSCALL doorbell; bit 2:
//	                  the local APIC is KVM's, not govmm's: --lapic=kvm)
//	CPUID 0x40000102: the SYSCALL doorbell's page (package pvsyscall)
package hvcpuid

import (
	"slices"

	"github.com/govmm/govmm/kvm"
)

// Leaves and the signature.
const (
	KVMSignature = 0x40000000 // KVM's: "KVMKVMKVM", passed through
	KVMFeatures  = 0x40000001 // KVM's feature bits (EAX)
	Base         = 0x40000100 // govmm's signature leaf
	Features     = 0x40000101 // govmm's feature bits (EAX)
	Signature    = "GovmmGovmmGo"
)

// KVM features govmm always shows: kvmclock, whose MSRs are handled inside
// KVM with or without an in-kernel APIC, and nothing of it is a hypercall.
// No other KVM PV feature unless one of govmm's units serves it (each one
// would make a guest issue hypercalls that need KVM's in-kernel APIC, or
// that hang on emulating hosts).
const (
	KVMFeatureClocksource2      = 1 << 3
	KVMFeatureClocksourceStable = 1 << 24
	// KVMFeaturePVSendIPI is KVM's PV send-IPI (KVM_HC_SEND_IPI, a vmcall
	// KVM serves with its in-kernel LAPIC): shown under --lapic=kvm
	// --pv-ipi only.
	KVMFeaturePVSendIPI = 1 << 11
)

// FeatureKVMLAPIC (in Features EAX) tells a guest that its local APIC is
// KVM's in-kernel one (--lapic=kvm): govmm's marker then counts a
// section's exits with KVM's statistics, which take in every exit KVM
// serves (a host interrupt's, a PAUSE loop's), and govmm sees none of the
// APIC's.
const FeatureKVMLAPIC = 1 << 2

// Leaves is what the VM's PV features show.
type Leaves struct {
	KVMFeatures uint32           // bits added to 0x40000001 EAX
	Features    uint32           // 0x40000101 EAX
	More        []kvm.CPUIDEntry // govmm leaves after 0x40000101
}

// Apply rewrites KVM's feature leaf of table in place and appends govmm's
// leaves: signature, features, then the others by function.
func (l *Leaves) Apply(table []kvm.CPUIDEntry) []kvm.CPUIDEntry {
	for i := range table {
		if e := &table[i]; e.Function == KVMFeatures {
			e.EAX, e.EBX, e.ECX, e.EDX = KVMFeatureClocksource2|KVMFeatureClocksourceStable|l.KVMFeatures, 0, 0, 0
		}
	}
	more := slices.Clone(l.More)
	slices.SortFunc(more, func(a, b kvm.CPUIDEntry) int { return int(a.Function) - int(b.Function) })
	last := uint32(Features)
	if len(more) > 0 {
		last = max(last, more[len(more)-1].Function)
	}
	sig := []byte(Signature)
	le := func(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
	table = append(table,
		kvm.CPUIDEntry{Function: Base, EAX: last, EBX: le(sig[0:]), ECX: le(sig[4:]), EDX: le(sig[8:])},
		kvm.CPUIDEntry{Function: Features, EAX: l.Features})
	return append(table, more...)
}
