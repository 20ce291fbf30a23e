// This file holds exit dispatch: each KVM exit reason to its handler,
// PIO, MMIO and MSR exits to the exit bus, and each exit counted by cause.

package vcpu

import (
	"errors"
	"fmt"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/internal/hostcpu"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// handleExit dispatches one KVM exit, logs it and counts it. Its switch
// compares (a switch on the reason, this dense, compiles to a jump
// table: a page of read-only data every exit would touch, loop.go says
// why pages count), the commonest exits first.
func (v *VCPU) handleExit(run *kvm.Run) error {
	v.log.add(evExit, run.ExitReason, run.Sync.Regs.RIP)
	switch r := run.ExitReason; {
	case r == kvm.ExitIO || r == kvm.ExitMMIO || r == kvm.ExitX86RDMSR || r == kvm.ExitX86WRMSR:
		if err := v.handleBusExit(r); err != nil {
			return err
		}
	case r == kvm.ExitHLT:
		v.exits.Count(exitcause.HLT) // no window: the halt waits, and its wake-up is charged when it comes
		if !v.halt(run.IFFlag != 0) {
			return errStop
		}
	case r == kvm.ExitIRQWindowOpen:
		v.exits.Begin(exitcause.IRQWindow) // the window charged to its interrupt (exitFor) is read with it
		v.exitFor(v.windowFor >= 0, uint8(v.windowFor), vlapic.ExitWindow)
	case r == kvm.ExitIntr:
		v.endedBy() // counted by the next entry's look (countKick)
	case r == kvm.ExitSetTPR:
		v.exits.Count(exitcause.SetTPR)
	case r == kvm.ExitInternalError:
		return v.recover()
	case r == kvm.ExitShutdown:
		v.exits.Count(exitcause.Shutdown)
		msg := shutdownMessage(hostIsAMD, run.Sync.Regs.RIP, v.prevExitRIP)
		if !hostIsAMD {
			msg += v.shutdownSegments()
		}
		// What the vCPU did just before (a SIPI's vector, the exits since):
		// on AMD all there is to tell a guest's own wreck from govmm's.
		return shutdownError(msg + "; its last events: " + v.log.String() + v.sipiPageBytes())
	case r == kvm.ExitFailEntry:
		v.exits.Count(exitcause.Other)
		return fmt.Errorf("KVM could not enter the guest (hardware entry failure reason %#x)",
			v.kvm.FailEntry().HardwareEntryFailureReason)
	case r == kvm.ExitSystemEvent:
		v.exits.Count(exitcause.Other)
		return fmt.Errorf("guest system event %d", v.kvm.SystemEvent().Type)
	default:
		v.exits.Count(exitcause.Other)
		return fmt.Errorf("unhandled KVM exit reason %d at RIP %#x", run.ExitReason, run.Sync.Regs.RIP)
	}
	v.prevExitRIP = run.Sync.Regs.RIP
	if v.stopped() {
		return errStop
	}
	return nil
}

// handleBusExit serves an exit the exit bus answers (a port, MMIO, an
// MSR) and says whether it left this vCPU's own LAPIC as it was
// (exitQuiet, for quietEntry): any port; MMIO outside the vCPU's own
// ranges (its xAPIC page); an IPI's send.
func (v *VCPU) handleBusExit(reason uint32) error {
	v.sendExit, v.tprWrite = false, false
	switch reason {
	case kvm.ExitIO:
		if err := v.handleIO(); err != nil {
			return err
		}
		v.exitQuiet = true // no port is the LAPIC's
	case kvm.ExitMMIO:
		own, err := v.handleMMIO()
		if err != nil {
			return err
		}
		// The vCPU's own page: an IPI's send, or an EOI that left the
		// LAPIC settled, as an x2APIC one below (every xAPIC interrupt's
		// EOI made a full entry, a LAPIC look and 400 instructions more).
		v.exitQuiet = !own || v.sendExit || v.settledEOI()
	default:
		// The MSRs that exit to user space: the x2APIC range (KVM has no
		// APIC of its own), served on the vCPU's own LAPIC (x2apic), and
		// from the bus those the MSR filter claims (built from the bus)
		// and MSRs KVM does not know (busMSR). vlapic.ErrGP is the
		// guest's #GP; any other error is govmm's own failure, not the
		// guest's: the VM stops.
		m, write := v.hwMSR(), reason == kvm.ExitX86WRMSR
		var err error
		if v.lapic != nil && m.Index-vlapic.MSRX2APICFirst <= vlapic.MSRX2APICLast-vlapic.MSRX2APICFirst {
			err = v.x2apic(m, write)
		} else {
			err = v.busMSR(m, write)
		}
		m.Error = 0
		if err != nil {
			if err = v.msrError(m, err); err != nil {
				return err
			}
		}
		v.exitQuiet = v.sendExit || v.quietTPR() || v.settledEOI()
	}
	return nil
}

// settledEOI says whether the APIC exit just served (an x2APIC MSR, or
// the vCPU's own xAPIC page) was an EOI that left the LAPIC settled
// (exitbus.Access.Settled: nothing requested or latched, the timer
// stopped) and this loop with nothing standing either
// (no window asked for, no PV EOI offer, no exception queued): then the
// state is what a full entry would find quiet (nothingStanding), and it
// is recorded so, and the entry needs no look unless a Notify comes
// first. The EOI's own look was under the LAPIC's lock; a delivery after
// it notifies (quietEntry). An IPI to a halted vCPU so ends with two
// looks where it had three: the halt's, the injecting entry's.
func (v *VCPU) settledEOI() bool {
	if !v.acc.Settled || v.exceptionQueued {
		return false
	}
	v.quiet = v.events.None() && v.windowFor < 0 && !v.pvOffered
	return v.quiet
}

// quietTPR says whether the MSR exit just served was an x2APIC TPR write
// the LAPIC took (no #GP), and then gives kvm_run's CR8 its new class
// itself, as a full entry would from the LAPIC. With nothing requested
// (quietEntry's precondition: IRR empty), a new TPR moves PPR but makes
// nothing deliverable, so the entry needs no look: a guest that raises
// and lowers TPR around its critical sections (what CPUs shadow TPR for)
// then pays one lock round trip per write, the handler's, where it paid
// two.
func (v *VCPU) quietTPR() bool {
	if !v.tprWrite || v.exceptionQueued {
		return false
	}
	v.cr8 = v.acc.Value >> 4 & 0xF
	v.runData.CR8 = v.cr8
	return true
}

// apicSend is exitcause.APIC(x2apic, write, r).Class().IPISend() without
// the class lookup (TestAPICSend): the causes take registers modulo the
// xAPIC page's 64, and ICR, ICR2 and SELF_IPI are the sends'.
func apicSend(r vlapic.Register) bool {
	r %= 64
	return r == vlapic.RegICR || r == vlapic.RegICR2 || r == vlapic.RegSelfIPI
}

// tprWriteCause is the exit cause of an x2APIC TPR write (quietTPR),
// exitcause.APIC(true, true, RegTPR) as a constant: as a variable it sat
// on a data page of its own (beside the runtime's), one page more in every
// x2APIC exit's step (scripts/rtt-pages.sh).
const tprWriteCause = exitcause.MSRAPICWrite + exitcause.Cause(vlapic.RegTPR)

// hostIsAMD: the host processor is AMD's (CPUID vendor "AuthenticAMD").
var hostIsAMD = func() bool {
	_, b, c, d := hostcpu.CPUID(0, 0)
	return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163
}()

// handleIO serves port I/O from the bus, string forms (rep ins/outs)
// element by element; unclaimed ports read as all ones and ignore writes,
// as on a PC.
func (v *VCPU) handleIO() error {
	e, data := v.hwIO()
	write := e.Direction != kvm.IOIn
	r, base := v.bus.Lookup(v.id, exitbus.PIO, uint64(e.Port))
	if r == nil {
		v.exits.Count(exitcause.PIOOther)
		if !write {
			fill(data)
		}
		return nil
	}
	a := v.access(r, uint64(e.Port), base, write)
	size := int(e.Size)
	for i := 0; i+size <= len(data); i += size {
		a.Data = data[i : i+size]
		if err := r.Handler.Access(a); err != nil {
			return err
		}
	}
	v.charged(r, a)
	return nil
}

// handleMMIO serves MMIO from the bus (the vCPU's own xAPIC page first);
// unclaimed addresses read as all ones and ignore writes. own says whether
// the range is one of this vCPU's own (per-vCPU or movable: its xAPIC
// page), whose state no Notify announces (quietEntry).
func (v *VCPU) handleMMIO() (own bool, err error) {
	m := v.hwMMIO()
	data := m.Data[:min(int(m.Len), len(m.Data))]
	write := m.IsWrite != 0
	var r *exitbus.Range
	var base uint64
	if v.lapic != nil {
		if base, ok := v.lapic.PageBase(); ok && m.PhysAddr-base < xapicPageSize {
			v.xapicPage(m.PhysAddr-base, data, write)
			return true, nil
		}
		// The bus's LAPIC page range is this LAPIC's (routing): missed.
		r, base = v.bus.LookupOthers(v.id, exitbus.MMIO, m.PhysAddr)
	} else {
		r, base = v.bus.Lookup(v.id, exitbus.MMIO, m.PhysAddr)
	}
	if r == nil {
		v.exits.Count(exitcause.MMIOOther)
		if !write {
			fill(data)
		}
		return false, nil
	}
	a := v.access(r, m.PhysAddr, base, write)
	a.Data = data
	err = r.Handler.Access(a)
	v.charged(r, a)
	return r.PerCPU || r.At != nil, err
}

// busMSR serves an MSR exit from the bus: unclaimed MSRs are answered
// with #GP, as on hardware.
func (v *VCPU) busMSR(m *kvm.MSRExit, write bool) error {
	r, base := v.bus.Lookup(v.id, exitbus.MSR, uint64(m.Index))
	var err error
	if r == nil {
		v.exits.Count(pick(write, exitcause.MSROtherWrite, exitcause.MSROtherRead))
		err = vlapic.ErrGP
	} else {
		a := v.access(r, uint64(m.Index), base, write)
		a.Value = m.Data
		err = r.Handler.Access(a)
		v.charged(r, a)
		if !write && err == nil {
			m.Data = a.Value
		}
	}
	return err
}

// msrError answers an MSR exit that failed: vlapic.ErrGP is the guest's
// #GP, any other error govmm's own.
func (v *VCPU) msrError(m *kvm.MSRExit, err error) error {
	if errors.Is(err, vlapic.ErrGP) {
		m.Error = 1 // KVM injects #GP(0) at the next entry
		v.exceptionQueued = true
		return nil
	}
	return err
}

// x2apic serves an x2APIC MSR (0x800-0x8FF) on the vCPU's own LAPIC.
// These MSRs are the logical processor's own APIC registers, reached by
// its RDMSR and WRMSR with no platform routing in between (SDM 11.12.1),
// and KVM serves them so, from the vCPU (kvm_x2apic_msr_write and
// kvm_x2apic_msr_read, arch/x86/kvm/lapic.c). The exit bus still holds
// the range (routing/lapic.go: the MSR map, and a handler doing the same
// for an access made with no vCPU of govmm's); the exit is counted under
// the bus's cause (exitcause.APIC, as routing's x2apicCause), and what
// the entry after it needs is set as the bus path sets it (access: an
// IPI's send, a TPR write; the Access's Value and Settled). Served here it
// skips the bus's lookup, the Access's reset and the handler's indirect
// calls: 250 of the 900 instructions an x2APIC TPR write's exit took in
// govmm (BenchmarkExit under callgrind).
func (v *VCPU) x2apic(m *kvm.MSRExit, write bool) error {
	reg := vlapic.RegisterOfMSR(m.Index)
	c := exitcause.APIC(true, write, uint16(reg))
	v.exits.Begin(c) // an ICR write's IPIs, an EOI's charge: read with it (Run ends the window)
	v.sendExit = apicSend(reg)
	v.tprWrite = c == tprWriteCause
	v.acc.Value, v.acc.Settled = m.Data, false
	if !write {
		var err error
		if v.acc.Value, err = v.lapic.ReadMSR(m.Index); err == nil {
			m.Data = v.acc.Value
		}
		return err
	}
	err := v.lapic.WriteX2APIC(reg, m.Data, &v.eff)
	v.acc.Settled = v.eff.Settled
	return err
}

// xapicPageSize is the xAPIC page's size (routing's range).
const xapicPageSize = 0x1000

// xapicPage serves an access to the vCPU's own xAPIC page, at offset off,
// on its LAPIC, as x2apic serves the x2APIC MSRs and as KVM does
// (apic_mmio_write and apic_mmio_read, arch/x86/kvm/lapic.c, reached
// before any other MMIO device): the page is the CPU's own, wherever its
// APIC_BASE puts it. The bus holds it too (routing/lapic.go, a movable
// range that Lookup consults before the fixed ones, as this comes before
// Lookup), for the MMIO map and callers with no vCPU loop; the exit is
// counted under the bus's cause (routing's xapicCause), and an IPI's send
// is marked as access marks it. It skips the bus's lookup, the Access,
// the cause's and the handler's indirect calls and the page they touch.
func (v *VCPU) xapicPage(off uint64, data []byte, write bool) {
	reg := vlapic.RegisterOfOffset(off)
	v.exits.Begin(exitcause.APIC(false, write, uint16(reg)))
	v.sendExit = apicSend(reg)
	if write {
		v.acc.Settled = v.lapic.WriteMMIO(off, data).Settled
	} else {
		v.acc.Settled = false
		v.lapic.ReadMMIO(off, data)
	}
}

// access readies the vCPU's Access for one exit to range r and charges
// r's cause, unless its handler decides it (exitbus.HandlerCharges, then
// charged by charged).
func (v *VCPU) access(r *exitbus.Range, addr, base uint64, write bool) *exitbus.Access {
	v.acc.Reset(v.id, addr, base, write, v)
	c, ok := r.Cause.Of(v.acc.Off, write)
	if ok {
		v.exits.Begin(c) // what the handler counts is read with it (Run ends the window)
	}
	// An IPI's send (ICR, ICR2, SELF_IPI, the PV send) changes nothing of
	// the sender's own LAPIC that its Notify does not announce: a
	// delivery to itself, the LVT error of an illegal vector
	// (quietEntry).
	v.sendExit = ok && c.Class().IPISend()
	v.tprWrite = ok && c == tprWriteCause
	if ok && c == exitcause.MSRPVEOIWrite {
		v.pvOff = false // the guest may have enabled PV EOI: offer again
	}
	return &v.acc
}

// charged charges what the handler of a HandlerCharges range decided, if
// it decided (a handler that fails may not have).
func (v *VCPU) charged(r *exitbus.Range, a *exitbus.Access) {
	if r.Cause.Deferred() {
		if c, ok := a.Charged(); ok {
			v.exits.Count(c) // no window: these handlers (the SYSCALL doorbell, PCI's configuration window) send no IPI
		}
	}
}

func fill(data []byte) {
	for i := range data {
		data[i] = 0xFF
	}
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// recover finishes an instruction the host's emulator gave up on
// (KVM_EXIT_INTERNAL_ERROR): the loop's one entry into package complete,
// which says how the exit is counted and whether it queued an exception.
func (v *VCPU) recover() error {
	o, err := v.completer.Complete(&v.log)
	v.exits.Count(o.Cause)
	if o.ExceptionQueued {
		v.exceptionQueued = true
	}
	return err
}
