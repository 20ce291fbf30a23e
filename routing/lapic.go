// This file holds the local APICs' place on the exit bus (lapicRanges):
// which ranges reach them, what each access is counted as, and the handler
// that serves it. What an access does to interrupts is observed by the
// LAPICs themselves (vlapic.Observer), not here.

package routing

import (
	"fmt"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/vlapic"
)

// lapicRanges are the local APICs' ranges on the exit bus. Each vCPU's
// accesses reach its own LAPIC (Access.CPU): the xAPIC page (movable,
// there only in xAPIC mode), the x2APIC MSRs (KVM without an in-kernel
// APIC sends them to user space as unknown MSRs), and TSC deadline and
// APIC_BASE, which the MSR filter claims (KVM would silently drop TSC
// deadline; govmm answers illegal APIC_BASE transitions with #GP).
type lapicRanges struct{ apics *vlapic.Bus }

// RegisterLAPICs puts the local APICs of apics on the exit bus b: each
// vCPU's xAPIC page and x2APIC MSR accesses reach its own LAPIC, and so do
// TSC_DEADLINE and APIC_BASE, which the MSR filter claims. A nil apics
// registers the ranges with no LAPIC behind them (the MSR filter's view,
// for the host probe).
func RegisterLAPICs(b *exitbus.Bus, apics *vlapic.Bus) error {
	return lapicRanges{apics}.register(b)
}

func (l lapicRanges) register(b *exitbus.Bus) error {
	for _, r := range []exitbus.Range{{
		Space: exitbus.MMIO, Base: vlapic.DefaultBase, Len: 0x1000, Name: "xAPIC page",
		At: l.pageAt, LoopServed: true,
		Cause:   exitbus.ByAccess(xapicCause),
		Handler: exitbus.HandlerFunc(l.page),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRX2APICFirst, Len: vlapic.MSRX2APICLast - vlapic.MSRX2APICFirst + 1, Name: "x2APIC", PerCPU: true,
		Cause:   exitbus.ByAccess(x2apicCause),
		Handler: exitbus.HandlerFunc(l.msr),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRTSCDeadline, Len: 1, Name: "TSC_DEADLINE", PerCPU: true, Filter: true,
		Cause:   exitbus.ReadWrite(exitcause.MSRTSCDeadlineRead, exitcause.MSRTSCDeadlineWrite),
		Handler: exitbus.HandlerFunc(l.deadline),
	}, {
		Space: exitbus.MSR, Base: vlapic.MSRAPICBase, Len: 1, Name: "APIC_BASE", PerCPU: true, Filter: true,
		Cause:   exitbus.ReadWrite(exitcause.MSRAPICBaseRead, exitcause.MSRAPICBaseWrite),
		Handler: exitbus.HandlerFunc(l.base),
	}} {
		if err := b.Register(r); err != nil {
			return err
		}
	}
	return nil
}

// pageAt is where cpu's xAPIC page is now (none outside xAPIC mode).
func (l lapicRanges) pageAt(cpu int) (uint64, bool) { return l.apics.LAPIC(cpu).PageBase() }

// xapicCause and x2apicCause count an access by the APIC register it
// reaches.
func xapicCause(off uint64, write bool) exitcause.Cause {
	return exitcause.APIC(false, write, uint16(vlapic.RegisterOfOffset(off)))
}

func x2apicCause(off uint64, write bool) exitcause.Cause {
	return exitcause.APIC(true, write, uint16(off))
}

// page serves an access to the xAPIC page.
func (l lapicRanges) page(a *exitbus.Access) error {
	if a.Write {
		a.Settled = l.apics.LAPIC(a.CPU).WriteMMIO(a.Off, a.Data).Settled
	} else {
		l.apics.LAPIC(a.CPU).ReadMMIO(a.Off, a.Data)
	}
	return nil
}

// msr serves an access to an x2APIC MSR that comes through the bus. A
// govmm vCPU does not send its own here: an x2APIC MSR is its CPU's own
// APIC register, which the vCPU loop serves on its LAPIC directly
// (vcpu's x2apic, as KVM's kvm_x2apic_msr_write); the range stays on the
// bus for the MSR map and for callers with no vCPU loop.
func (l lapicRanges) msr(a *exitbus.Access) (err error) {
	if a.Write {
		var eff vlapic.Effect
		eff, err = l.apics.LAPIC(a.CPU).WriteMSR(uint32(a.Addr), a.Value)
		a.Settled = eff.Settled
	} else {
		a.Value, err = l.apics.LAPIC(a.CPU).ReadMSR(uint32(a.Addr))
	}
	return err
}

// deadline serves an access to TSC_DEADLINE. A write is judged against
// the guest's TSC as KVM has it now (a host-initiated KVM_GET_MSRS of
// IA32_TSC on the exiting vCPU: its current offset), as KVM's own LAPIC
// does; vlapic.LAPIC.WriteTSCDeadline says why the host TSC plus an offset
// measured once is not that.
func (l lapicRanges) deadline(a *exitbus.Access) error {
	lapic := l.apics.LAPIC(a.CPU)
	if !a.Write {
		var err error
		a.Value, err = lapic.ReadMSR(vlapic.MSRTSCDeadline)
		return err
	}
	if a.Value == 0 { // disarms: no TSC to compare with
		lapic.WriteTSCDeadline(0, 0)
		return nil
	}
	tsc, err := a.VCPU.KVM().GetMSR(MSRTSC)
	if err != nil {
		return fmt.Errorf("reading the guest TSC for a TSC deadline: %w", err)
	}
	lapic.WriteTSCDeadline(a.Value, tsc)
	return nil
}

// base serves an access to APIC_BASE, whose accepted value KVM keeps too.
func (l lapicRanges) base(a *exitbus.Access) error {
	lapic := l.apics.LAPIC(a.CPU)
	if !a.Write {
		a.Value = lapic.Base()
		return nil
	}
	if err := lapic.SetBase(a.Value); err != nil {
		return err
	}
	return syncKVMAPICBase(a.VCPU, a.Value)
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

// MSRTSC is IA32_TIME_STAMP_COUNTER, the guest TSC a deadline is judged
// against.
const MSRTSC = 0x10
