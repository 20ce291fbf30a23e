package vmm

import (
	"fmt"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/vlapic"
)

// The local APICs' ranges on the exit bus. Each vCPU's accesses reach its
// own LAPIC (Access.CPU): the xAPIC page (movable, there only in xAPIC
// mode), the x2APIC MSRs (KVM without an in-kernel APIC sends them to user
// space as unknown MSRs), and TSC deadline and APIC_BASE, which the MSR
// filter claims (KVM would silently drop TSC deadline; govmm answers
// illegal APIC_BASE transitions with #GP).
func (vm *VM) registerLAPICs(b *exitbus.Bus) error {
	lapic := func(cpu int) *vlapic.LAPIC { return vm.apics.LAPIC(cpu) }
	for _, r := range []exitbus.Range{{
		Space: exitbus.MMIO, Base: vlapic.DefaultBase, Len: 0x1000, Name: "xAPIC page",
		At: func(cpu int) (uint64, bool) { return lapic(cpu).PageBase() },
		Cause: exitbus.ByAccess(func(off uint64, write bool) accounting.Cause {
			return accounting.APICCause(false, write, uint16(vlapic.RegisterOfOffset(off)))
		}),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			if a.Write {
				vm.countIPI(a.CPU, lapic(a.CPU).WriteMMIO(a.Off, a.Data), false)
			} else {
				lapic(a.CPU).ReadMMIO(a.Off, a.Data)
			}
			return nil
		}),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRX2APICFirst, Len: vlapic.MSRX2APICLast - vlapic.MSRX2APICFirst + 1, Name: "x2APIC", PerCPU: true,
		Cause: exitbus.ByAccess(func(off uint64, write bool) accounting.Cause {
			return accounting.APICCause(true, write, uint16(off))
		}),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) (err error) {
			if a.Write {
				var eff vlapic.Effect
				eff, err = lapic(a.CPU).WriteMSR(uint32(a.Addr), a.Value)
				vm.countIPI(a.CPU, eff, true)
			} else {
				a.Value, err = lapic(a.CPU).ReadMSR(uint32(a.Addr))
			}
			return err
		}),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRTSCDeadline, Len: 1, Name: "TSC_DEADLINE", PerCPU: true, Filter: true,
		Cause: exitbus.ReadWrite(accounting.CauseMSRTSCDeadlineRead, accounting.CauseMSRTSCDeadlineWrite),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) (err error) {
			if a.Write {
				_, err = lapic(a.CPU).WriteMSR(uint32(a.Addr), a.Value)
			} else {
				a.Value, err = lapic(a.CPU).ReadMSR(uint32(a.Addr))
			}
			return err
		}),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRAPICBase, Len: 1, Name: "APIC_BASE", PerCPU: true, Filter: true,
		Cause: exitbus.ReadWrite(accounting.CauseMSRAPICBaseRead, accounting.CauseMSRAPICBaseWrite),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			if !a.Write {
				a.Value = lapic(a.CPU).Base()
				return nil
			}
			if err := lapic(a.CPU).SetBase(a.Value); err != nil {
				return err
			}
			return syncKVMAPICBase(a.VCPU, a.Value)
		}),
	}} {
		if err := b.Register(r); err != nil {
			return err
		}
	}
	return nil
}

// syncKVMAPICBase hands an APIC_BASE value govmm accepted to KVM as well
// (a host-initiated KVM_SET_MSRS, which the MSR filter does not stop): KVM
// keeps its own copy without an in-kernel APIC (kvm_lapic_set_base stores
// it and, when EN changes, kvm_update_cpuid_runtime recomputes
// CPUID.1:EDX.APIC from it), and kvm_run->apic_base reports it at every
// exit. Without this the guest would read the APIC bit set while its APIC
// is disabled.
func syncKVMAPICBase(v exitbus.VCPU, val uint64) error {
	if err := v.KVM().SetMSR(vlapic.MSRAPICBase, val); err != nil {
		return fmt.Errorf("APIC_BASE %#x accepted but KVM refused its copy: %w", val, err)
	}
	return nil
}

// countIPI charges an ICR or SELF_IPI write to cpu's IPI counters, and
// an EOI write that ended an IPI to that IPI's kind (the latency tag is
// the kind, vmm/latency.go).
func (vm *VM) countIPI(cpu int, e vlapic.Effect, x2apic bool) {
	if e.Ended != 0 {
		vm.acct.CPUs[cpu].Charge(e.Ended.Tag(), accounting.ChargeEOI)
	}
	if !e.IPI {
		return
	}
	k := ipiKind(e.Msg, x2apic)
	vm.acct.CPUs[cpu].IPISent[k].Add(1)
	vm.acct.CPUs[cpu].IPIDelivered[k].Add(uint64(e.Targets))
}

func ipiKind(m vlapic.Message, x2apic bool) accounting.IPIKind {
	switch m.Shorthand {
	case vlapic.Self:
		return accounting.IPISelf
	case vlapic.AllIncludingSelf:
		return accounting.IPIAllIncludingSelf
	case vlapic.AllExcludingSelf:
		return accounting.IPIAllExcludingSelf
	}
	switch {
	case x2apic && m.Dest == 0xFFFFFFFF, !x2apic && m.Dest == 0xFF:
		return accounting.IPIBroadcast
	case x2apic && m.DestMode == vlapic.Logical:
		return accounting.IPIX2APICLogical
	case x2apic:
		return accounting.IPIX2APICPhysical
	case m.DestMode == vlapic.Logical:
		return accounting.IPIXAPICLogical
	}
	return accounting.IPIXAPICPhysical
}
