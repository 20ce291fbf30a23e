package vmm

import (
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/internal/hostcpu"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/xstate"
)

// CPUID bits govmm sets or clears.
const (
	cpuid1ECXX2APIC      = 1 << 21
	cpuid1ECXTSCDeadline = 1 << 24
	cpuid1ECXHypervisor  = 1 << 31
	cpuid1ECXXSAVE       = 1 << 26
	amdPerfCtrCore       = 1 << 23 // CPUID 0x80000001 ECX: core performance counters
	amdPerfCtrNB         = 1 << 24
	amdPerfCtrLLC        = 1 << 28
	cpuid1EDXAPIC        = 1 << 9
)

// cpuidFor derives vCPU id's CPUID from what KVM supports: its APIC IDs,
// the x2APIC and TSC-deadline bits as configured, the hypervisor bit, and
// the hypervisor leaves of the VM's PV features (package hvcpuid).
func cpuidFor(supported []kvm.CPUIDEntry, id, cpus int, o cpuidOptions) []kvm.CPUIDEntry {
	x2apic := o.x2apic
	out := make([]kvm.CPUIDEntry, 0, len(supported))
	// An emulating host's KVM may offer XSAVE state (leaf 0xD) but clear
	// CPUID.1:ECX.XSAVE, while its guests see the host's leaf 1 with XSAVE
	// set anyway: then a kernel that sets CR4.OSXSAVE gets #GP from KVM
	// (kvm_is_valid_cr4 checks the CPUID govmm gave). govmm completes the
	// XSAVE family itself where KVM cannot (complete/xsave.go), so the bit
	// follows leaf 0xD.
	_, hasXSAVE := lookupCPUID(supported, 0xD, 0)
	for _, e := range supported {
		switch e.Function {
		case 1:
			e.EBX = e.EBX&0x0000FFFF | uint32(min(cpus, 255))<<16 | uint32(id&0xFF)<<24
			e.ECX |= cpuid1ECXHypervisor
			if o.tscDeadline {
				e.ECX |= cpuid1ECXTSCDeadline
			} else {
				e.ECX &^= cpuid1ECXTSCDeadline
			}
			if x2apic {
				e.ECX |= cpuid1ECXX2APIC
			} else {
				e.ECX &^= cpuid1ECXX2APIC
			}
			e.EDX |= cpuid1EDXAPIC
			if hasXSAVE {
				e.ECX |= cpuid1ECXXSAVE
			}
		case 0xB, 0x1F:
			// Extended topology: one thread per core, one core per package;
			// EDX is the x2APIC ID.
			switch e.Index {
			case 0:
				e.EAX, e.EBX, e.ECX = 0, 1, 0x100
			case 1:
				e.EAX, e.EBX, e.ECX = bitsFor(cpus), uint32(cpus), 0x201
			default:
				e.EAX, e.EBX, e.ECX = 0, 0, e.Index
			}
			e.EDX = uint32(id)
		case 4:
			// Deterministic cache parameters, made to agree with leaf 0xB:
			// EAX[31:26] is the APIC-ID space of cores in the package less
			// one (Linux's x86_max_cores), EAX[25:14] that of the CPUs
			// sharing the cache less one: one thread per core for L1 and
			// L2, the whole package for the last level.
			if e.EAX&0x1F != 0 {
				span := uint32(1)<<bitsFor(cpus) - 1
				sharing := uint32(0)
				if level := e.EAX >> 5 & 7; level >= 3 {
					sharing = span
				}
				e.EAX = e.EAX&0x3FFF | sharing<<14 | span<<26
			}
		case 0x80000008:
			// AMD: ECX[7:0] cores in the package less one, ECX[15:12] the
			// APIC-ID bits they take; the same topology as leaf 0xB.
			e.ECX = e.ECX&^0xF0FF | bitsFor(cpus)<<12 | uint32(cpus-1)&0xFF
		case 0xA, 0x80000022:
			// No PMU: a counter overflow interrupt can only be delivered
			// through KVM's in-kernel APIC (kvm_pmu_deliver_pmi needs
			// lapic_in_kernel), which govmm does not have; a guest shown
			// architectural perfmon (Intel leaf 0xA, AMD PerfMonV2 leaf
			// 0x80000022) would program counters whose interrupts never come.
			e.EAX, e.EBX, e.ECX, e.EDX = 0, 0, 0, 0
		case 0x80000001:
			e.ECX &^= amdPerfCtrCore | amdPerfCtrNB | amdPerfCtrLLC
		}
		out = append(out, e)
	}
	return o.pv.Apply(out)
}

// cpuidOptions are the VM-wide choices CPUID shows.
type cpuidOptions struct {
	x2apic bool
	pv     hvcpuid.Leaves // what the PV features show (vmm/pv.go)
	// tscDeadline advertises TSC-deadline mode: only where the host probe
	// found that a guest's WRMSR to IA32_TSC_DEADLINE reaches govmm (on
	// VMX with the preemption timer KVM drops it: docs/hosts.md). Without
	// it Linux runs its LAPIC timer one-shot, with TMICT writes.
	tscDeadline bool
}

// bitsFor is the number of APIC-ID bits that cover n CPUs.
func bitsFor(n int) uint32 {
	b := uint32(0)
	for 1<<b < n {
		b++
	}
	return b
}

// lookupCPUID finds one leaf and sub-leaf in a CPUID table.
func lookupCPUID(entries []kvm.CPUIDEntry, leaf, sub uint32) (kvm.CPUIDEntry, bool) {
	for _, e := range entries {
		if e.Function == leaf && (e.Index == sub || e.Flags&kvmCPUIDFlagSignificantIndex == 0) {
			return e, true
		}
	}
	return kvm.CPUIDEntry{}, false
}

// kvmCPUIDFlagSignificantIndex is KVM_CPUID_FLAG_SIGNIFCANT_INDEX: the
// entry is for one sub-leaf only.
const kvmCPUIDFlagSignificantIndex = 1

// xstateLayout is the XSAVE layout a vCPU with CPUID table entries has,
// for completing the XSAVE family (complete/xsave.go). The instruction forms it
// accepts are those of the table and those of the host processor: the
// emulating host this was written on lets the guest see the host's
// CPUID.(0xD,1) whatever the table says (its KVM offers no XSAVEC, yet
// govmm's guest kernel reports "using 'compacted' format" and runs XRSTOR
// on compacted areas), and an instruction the guest was shown must work.
func xstateLayout(entries []kvm.CPUIDEntry) *xstate.Layout {
	if _, ok := lookupCPUID(entries, 0xD, 0); !ok {
		return nil
	}
	l := xstate.NewLayout(func(leaf, sub uint32) (uint32, uint32, uint32, uint32) {
		e, _ := lookupCPUID(entries, leaf, sub)
		return e.EAX, e.EBX, e.ECX, e.EDX
	})
	host := xstate.NewLayout(hostcpu.CPUID)
	l.XSAVEOPT = l.XSAVEOPT || host.XSAVEOPT
	l.XSAVEC = l.XSAVEC || host.XSAVEC
	l.XGETBV1 = l.XGETBV1 || host.XGETBV1
	l.XSAVES = l.XSAVES || host.XSAVES
	return &l
}
