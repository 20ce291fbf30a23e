package vcpu

import (
	"errors"
	"fmt"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/internal/hostcpu"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/pvsyscall"
	"github.com/govmm/govmm/vlapic"
)

// handleExit dispatches one KVM exit and counts it.
func (v *VCPU) handleExit(run *kvm.Run) error {
	switch run.ExitReason {
	case kvm.ExitIO:
		v.handleIO()
	case kvm.ExitMMIO:
		if err := v.handleMMIO(); err != nil {
			return err
		}
	case kvm.ExitX86RDMSR:
		if err := v.handleMSR(false); err != nil {
			return err
		}
	case kvm.ExitX86WRMSR:
		if err := v.handleMSR(true); err != nil {
			return err
		}
	case kvm.ExitHLT:
		v.acct.Exit(accounting.CauseHLT)
		if !v.halt(run.IFFlag != 0) {
			return errStop
		}
	case kvm.ExitIRQWindowOpen:
		v.acct.Exit(accounting.CauseIRQWindow)
	case kvm.ExitIntr:
		v.acct.Exit(v.kickCause())
	case kvm.ExitSetTPR:
		v.acct.Exit(accounting.CauseSetTPR)
	case kvm.ExitInternalError:
		return v.recover()
	case kvm.ExitShutdown:
		v.acct.Exit(accounting.CauseShutdown)
		return errors.New(shutdownMessage(hostIsAMD, run.Sync.Regs.RIP, v.prevExitRIP))
	case kvm.ExitFailEntry:
		v.acct.Exit(accounting.CauseOther)
		return fmt.Errorf("KVM could not enter the guest (hardware entry failure reason %#x)",
			v.kvm.FailEntry().HardwareEntryFailureReason)
	case kvm.ExitSystemEvent:
		v.acct.Exit(accounting.CauseOther)
		return fmt.Errorf("guest system event %d", v.kvm.SystemEvent().Type)
	default:
		v.acct.Exit(accounting.CauseOther)
		return fmt.Errorf("unhandled KVM exit reason %d at RIP %#x", run.ExitReason, run.Sync.Regs.RIP)
	}
	v.prevExitRIP = run.Sync.Regs.RIP
	if v.stopped() {
		return errStop
	}
	return nil
}

// hostIsAMD: the host processor is AMD's (CPUID vendor "AuthenticAMD").
var hostIsAMD = func() bool {
	_, b, c, d := hostcpu.CPUID(0, 0)
	return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163
}()

// shutdownMessage names a triple fault's RIP. On AMD, KVM has reset the
// VMCB before it reports KVM_EXIT_SHUTDOWN (shutdown_interception in
// svm.c re-initialises it), so the RIP it shows is the reset vector's, not
// the guest's: name the previous exit's instead.
func shutdownMessage(amd bool, rip, prev uint64) string {
	if amd {
		return fmt.Sprintf("guest triple fault (shutdown) at an unknown RIP (on AMD KVM resets the VMCB first); the exit before it was at RIP %#x", prev)
	}
	return fmt.Sprintf("guest triple fault (shutdown) at RIP %#x", rip)
}

// handleIO serves port I/O, string forms (rep ins/outs) element by element.
func (v *VCPU) handleIO() {
	e, data := v.kvm.IO()
	dev, cause, ok := v.ports.Lookup(e.Port)
	v.acct.Exit(cause)
	size := int(e.Size)
	for i := 0; i+size <= len(data); i += size {
		d := data[i : i+size]
		switch {
		case !ok && e.Direction == kvm.IOIn:
			for j := range d {
				d[j] = 0xFF
			}
		case !ok:
		case e.Direction == kvm.IOIn:
			dev.In(v.id, e.Port, d)
		default:
			dev.Out(v.id, e.Port, d)
		}
	}
}

// handleMMIO serves the vCPU's own xAPIC page, then the VM's other MMIO
// devices; unclaimed addresses read as all ones and ignore writes.
func (v *VCPU) handleMMIO() error {
	m := v.kvm.MMIO()
	n := int(m.Len)
	if n > len(m.Data) {
		n = len(m.Data)
	}
	data := m.Data[:n]
	write := m.IsWrite != 0
	if base, ok := v.lapic.PageBase(); ok && m.PhysAddr-base < 0x1000 {
		off := m.PhysAddr - base
		v.acct.Exit(accounting.APICCause(false, write, uint16(vlapic.RegisterOfOffset(off))))
		if write {
			v.countIPI(v.lapic.WriteMMIO(off, data), false)
		} else {
			v.lapic.ReadMMIO(off, data)
		}
		return nil
	}
	if v.syscallDoorbell && m.PhysAddr-pvsyscall.DoorbellGPA < pvsyscall.DoorbellLen {
		return v.doorbell(write, data)
	}
	if v.mmio != nil {
		if cause, ok := v.mmio.MMIO(v.id, m.PhysAddr, data, write); ok {
			v.acct.Exit(cause)
			return nil
		}
	}
	v.acct.Exit(accounting.CauseMMIOOther)
	if !write {
		for i := range data {
			data[i] = 0xFF
		}
	}
	return nil
}

// handleMSR serves the MSRs that exit to user space: the x2APIC range (KVM
// has no APIC of its own), TSC deadline and APIC_BASE (claimed with the MSR
// filter) and MSRs KVM does not know (answered with #GP, as on hardware).
// Its error is govmm's own failure, not the guest's: the VM stops.
func (v *VCPU) handleMSR(write bool) error {
	m := v.kvm.MSR()
	var err error
	switch idx := m.Index; {
	case idx >= vlapic.MSRX2APICFirst && idx <= vlapic.MSRX2APICLast:
		v.acct.Exit(accounting.APICCause(true, write, uint16(vlapic.RegisterOfMSR(idx))))
		if write {
			var eff vlapic.Effect
			eff, err = v.lapic.WriteMSR(idx, m.Data)
			v.countIPI(eff, true)
		} else {
			m.Data, err = v.lapic.ReadMSR(idx)
		}
	case idx == vlapic.MSRTSCDeadline:
		v.acct.Exit(pick(write, accounting.CauseMSRTSCDeadlineWrite, accounting.CauseMSRTSCDeadlineRead))
		if write {
			_, err = v.lapic.WriteMSR(idx, m.Data)
		} else {
			m.Data, err = v.lapic.ReadMSR(idx)
		}
	case idx == MSRPVEOI:
		v.acct.Exit(pick(write, accounting.CauseMSRPVEOIWrite, accounting.CauseMSRPVEOIRead))
		switch {
		case !v.pvEOI:
			err = vlapic.ErrGP
		case write && !v.writePVEOI(m.Data):
			err = vlapic.ErrGP
		case !write:
			m.Data = v.pvEOIMSR
		}
	case idx == pvsyscall.MSRSyscallEntry:
		v.acct.Exit(pick(write, accounting.CauseMSRSyscallEntryWrite, accounting.CauseMSRSyscallEntryRead))
		var d uint64
		d, err = v.handleSyscallEntryMSR(write, m.Data)
		if !write {
			m.Data = d
		}
	case idx == pvipi.MSRSendIPI:
		v.acct.Exit(accounting.CauseMSRPVIPI)
		err = v.sendPVIPI(write, m.Data)
	case idx == vlapic.MSRAPICBase:
		v.acct.Exit(pick(write, accounting.CauseMSRAPICBaseWrite, accounting.CauseMSRAPICBaseRead))
		if write {
			if err = v.lapic.SetBase(m.Data); err == nil {
				err = v.syncKVMAPICBase(m.Data)
			}
		} else {
			m.Data = v.lapic.Base()
		}
	default:
		v.acct.Exit(pick(write, accounting.CauseMSROtherWrite, accounting.CauseMSROtherRead))
		err = vlapic.ErrGP
	}
	m.Error = 0
	if errors.Is(err, vlapic.ErrGP) {
		m.Error = 1 // KVM injects #GP(0) at the next entry
		v.exceptionQueued = true
		return nil
	}
	return err
}

// syncKVMAPICBase hands an APIC_BASE value govmm accepted to KVM as well
// (a host-initiated KVM_SET_MSRS, which the MSR filter does not stop): KVM
// keeps its own copy without an in-kernel APIC (kvm_lapic_set_base stores
// it and, when EN changes, kvm_update_cpuid_runtime recomputes
// CPUID.1:EDX.APIC from it), and kvm_run->apic_base reports it at every
// exit. Without this the guest would read the APIC bit set while its APIC
// is disabled.
func (v *VCPU) syncKVMAPICBase(val uint64) error {
	if err := v.kvm.SetMSR(vlapic.MSRAPICBase, val); err != nil {
		return fmt.Errorf("APIC_BASE %#x accepted but KVM refused its copy: %w", val, err)
	}
	return nil
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// sendPVIPI serves govmm's PV send-IPI trap (package pvipi for the ABI).
func (v *VCPU) sendPVIPI(write bool, value uint64) error {
	if !write || v.apics == nil || v.mem == nil {
		return vlapic.ErrGP
	}
	regs := &v.kvm.RunData().Sync.Regs
	req, err := pvipi.Decode(v.mem, value, regs.RSI, regs.RDI)
	if err != nil {
		return vlapic.ErrGP
	}
	n := req.Deliver(v.apics, v.id)
	v.acct.IPISent[accounting.IPIParavirt].Add(1)
	v.acct.IPIDelivered[accounting.IPIParavirt].Add(uint64(n))
	return nil
}

// countIPI charges an ICR or SELF_IPI write to the IPI counters.
func (v *VCPU) countIPI(e vlapic.Effect, x2apic bool) {
	if !e.IPI {
		return
	}
	k := ipiKind(e.Msg, x2apic)
	v.acct.IPISent[k].Add(1)
	v.acct.IPIDelivered[k].Add(uint64(e.Targets))
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
