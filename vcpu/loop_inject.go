// This file holds interrupt injection before each entry: what the LAPIC
// has for this vCPU (look, enter), the events latched from it, the
// injection or interrupt window, and whether the guest can take one now.

package vcpu

import (
	"fmt"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// look is what the LAPIC has for this vCPU now, as one value: a PV EOI the
// guest did is completed first (its vector would hide a lower one), the
// LAPIC's new events are latched with those not yet acted on, and the
// pending vector is looked for (TakePending folds the AVIC backing page).
// The events in the value are all the latched ones (v.events).
func (v *VCPU) look() vlapic.Pending {
	v.pvSync()
	return v.latchPending(v.lapic.TakePending())
}

// enter is look with the timer's tick, CR8 and the timer's deadline, in
// one LAPIC lock round trip (vlapic.LAPIC.Enter) where Tick, look and
// syncTimer take three: what an entry, and each turn of a halt's wait,
// needs. A PV EOI the guest did is completed first (its vector would hide
// a lower one), as look does.
func (v *VCPU) enter() (vlapic.Pending, vlapic.Entry) {
	v.pvSync()
	e := v.lapic.Enter()
	return v.latchPending(e.Pending), e
}

// latchPending latches the events of p, taken from the LAPIC, and returns
// p with all the latched ones (v.events): what look and enter return.
func (v *VCPU) latchPending(p vlapic.Pending) vlapic.Pending {
	v.latch(p.Events)
	p.Events = v.events
	return p
}

// prepareEntry acts on latched INIT/SIPI/NMI and injects the highest
// deliverable vector, or asks KVM for an interrupt window when the guest
// cannot take it now. It decides from one vlapic.Pending value (look, which
// folds the LAPIC's AVIC backing page, so every vector posted before it
// runs is seen here) and one acknowledgement (vlapic.Ack). It returns
// errStop if the VM ended while the vCPU was waiting for SIPI. The loop
// calls it when the entry is not quiet (quietEntry, inlined there: most
// exits of a busy guest make a quiet entry).
func (v *VCPU) prepareEntry() error {
	run := v.runData
	if v.stopped() { // after quietEntry took notified: see stopped
		return errStop
	}
	p, e := v.enter()
	v.countKick(p)
	v.syncTimerTo(e.TimerAt, e.TimerArmed)
	v.cr8 = e.CR8
	v.takeBackPVEOIOffer(p)
	if v.events.INIT {
		var err error
		if p, err = v.takeINIT(); err != nil {
			return err
		}
	}
	if err := v.injectNMIs(); err != nil {
		return err
	}
	if err := v.injectSMI(); err != nil {
		return err
	}
	v.events.ExtINT = false // no 8259: nothing to acknowledge
	allowed := interruptAllowed(run, v.exceptionQueued)
	injected := -1
	if p.Fixed && allowed {
		var err error
		if injected, err = v.injectFixed(run); err != nil {
			return err
		}
	}
	// A vector that arrives from here on notifies this vCPU, whose kick
	// makes the coming KVM_RUN exit at once (immediate_exit): only a
	// vector the CPU cannot take now needs the window.
	v.windowFor = -1
	if p.NeedsWindow(allowed) {
		v.windowFor = int(p.Vector)
	}
	v.hwSetRequestInterruptWindow(v.windowFor >= 0)
	if run.DirtyRegs&kvm.SyncRegsSregs != 0 {
		// KVM_RUN will load the sregs a handler edited, and loading them
		// queues the lowest vector of interrupt_bitmap for injection
		// (__set_sregs in arch/x86/kvm/x86.c): the bitmap must be what is
		// queued now, not what was at the exit.
		run.Sync.Sregs.InterruptBitmap = queuedBitmap(run.Sync.Sregs.InterruptBitmap, injected)
	}
	run.CR8 = v.cr8
	v.quiet = injected < 0 && v.nothingStanding(p, e)
	return nil
}

// injectFixed acknowledges the LAPIC's highest deliverable vector and
// queues it with KVM_INTERRUPT; it returns the vector, or -1 if the LAPIC
// had none to acknowledge after all.
func (v *VCPU) injectFixed(run *kvm.Run) (int, error) {
	ack := v.lapic.AcknowledgePV()
	if !ack.OK {
		return -1, nil
	}
	// The vector is in service now: failing to inject it would lose it,
	// so that is fatal, never silent.
	if err := v.hwInterrupt(ack.Vector); err != nil {
		return -1, fmt.Errorf("injecting vector %#x: %w", ack.Vector, err)
	}
	v.obs.Injected(v.id, ack.Vector)
	v.log.add(evInject, uint32(ack.Vector), run.Sync.Regs.RIP)
	if ack.PVEOI {
		v.pvOffer()
	}
	return int(ack.Vector), nil
}

// nothingStanding says whether an entry that injected nothing leaves
// nothing for a later one to act on: nothing requested or latched, no
// timer, no window, no PV EOI offer, no exception queued. Until something
// notifies this vCPU or it touches its own LAPIC, entries can then skip
// the look (quietEntry).
func (v *VCPU) nothingStanding(p vlapic.Pending, e vlapic.Entry) bool {
	return !p.Requested && v.events.None() && !e.TimerArmed && v.windowFor < 0 &&
		!v.pvOffered && !v.exceptionQueued
}

// quietEntry says whether this entry may skip prepareEntry's look at the
// LAPIC, because it could find nothing new: the last full entry found
// nothing and left nothing standing (quiet), the exit served since touched
// only devices or sent an IPI (exitQuiet, handleBusExit: a port, MMIO
// outside the vCPU's own xAPIC page, an ICR or PV send; no other MSR, which
// may be the vCPU's APIC, TSC deadline or PV EOI MSR) or was an EOI that
// left the LAPIC settled (settledEOI, which records quiet), no handler queued
// sregs for KVM to load, and no one notified the vCPU since. A MOV CR8
// the guest made is already in the LAPIC (syncCR8, after every KVM_RUN)
// and in kvm_run: with nothing requested, a new TPR makes nothing
// deliverable. Every change another thread
// makes to this LAPIC (a delivery, the timer's tick, a post to the AVIC
// page) is followed by its Notify, which sets notified before it reads
// state; the loop stored StateGuest (enterGuestState) before it takes
// notified here: with sequentially consistent atomics either the notifier
// sees StateGuest and kicks (immediate_exit), or this entry sees
// notified and looks. So a quiet entry loses nothing: it is the entry a
// full one would have made. A kick's exit, a HLT and a window are no
// device exits, so the entry after them looks.
func (v *VCPU) quietEntry(run *kvm.Run) bool {
	notified := v.notified.Swap(false)
	q := v.quiet && v.exitQuiet && !notified && run.DirtyRegs&kvm.SyncRegsSregs == 0
	v.exitQuiet = false
	return q
}

// takeBackPVEOIOffer takes back the PV EOI offer when p has a vector
// requested: an offer stands only while nothing else is requested, as KVM
// decides at every entry (apic_sync_pv_eoi_from_guest takes the offer
// back at each exit, apic_sync_pv_eoi_to_guest makes it again only
// with IRR empty; arch/x86/kvm/lapic.c). A vector held back by the
// one in service becomes deliverable at the guest's EOI: an exitless
// EOI would leave it waiting with nothing to make the CPU exit and
// take it (TestStorm avic/pv+pveoi/4 lost ten IPIs so, CI 2026-12-04),
// and a vector nested above it needs the first one's EOI real. Taken
// back, the guest's EOI exits, or was done and is completed here.
func (v *VCPU) takeBackPVEOIOffer(p vlapic.Pending) {
	if p.Requested {
		v.pvComplete()
	}
}

// injectNMIs makes each latched NMI one KVM_NMI: KVM queues them and keeps
// what the architecture can deliver (process_nmi). An NMI KVM refuses is
// an error, never dropped.
func (v *VCPU) injectNMIs() error {
	rip := v.runData.Sync.Regs.RIP
	for ; v.events.NMIs > 0; v.events.NMIs-- {
		if err := v.kvm.NMI(); err != nil {
			return fmt.Errorf("injecting an NMI: %w", err)
		}
		v.counts.NMIInjected()
		v.log.add(evNMI, 0, rip)
	}
	return nil
}

// injectSMI makes a latched SMI one KVM_SMI: KVM enters SMM where SMIs
// are not blocked (process_smi, enter_smm), at SMBASE + 0x8000 in the
// VM's SMM address space. Where the host's KVM has no SMM (Config.SMM
// false) the SMI cannot be delivered: it is counted as dropped and shown
// in the event log, never silently lost.
func (v *VCPU) injectSMI() error {
	if !v.events.SMI {
		return nil
	}
	v.events.SMI = false
	rip := v.runData.Sync.Regs.RIP
	if !v.smm {
		v.counts.SMI(false)
		v.log.add(evSMI, 0, rip)
		return nil
	}
	if err := v.kvm.SMI(); err != nil {
		return fmt.Errorf("injecting an SMI: %w", err)
	}
	v.counts.SMI(true)
	v.log.add(evSMI, 1, rip)
	return nil
}

func (v *VCPU) takeEvents() { v.latch(v.lapic.TakeEvents()) }

// latch adds events taken from the LAPIC to those not yet acted on.
func (v *VCPU) latch(e vlapic.Events) {
	v.events.NMIs = min(v.events.NMIs+e.NMIs, vlapic.MaxLatchedNMIs)
	if e.INIT {
		v.events.INIT, v.events.INITFrom = true, e.INITFrom
	}
	v.events.ExtINT = v.events.ExtINT || e.ExtINT
	v.events.SMI = v.events.SMI || e.SMI
	// A Startup IPI counts only for a CPU waiting for one (after INIT, or
	// with an INIT still to act on); any other CPU discards it, as
	// hardware does (SDM vol. 3, 10.4.7.3): latched, it would start the
	// CPU at a stale vector after its next INIT.
	if e.SIPI && (e.INIT || v.events.INIT || State(v.state.Load()) == StateWaitSIPI) {
		v.events.SIPI, v.events.SIPIVector = true, e.SIPIVector
	}
}

// interruptAllowed says whether an interrupt injected now will be taken at
// the next entry. It is what KVM reported at the exit
// (ready_for_interrupt_injection, if_flag) unless this exit's handler
// changed it: RFLAGS edited (a completed SYSCALL masks IF) is read from the
// registers KVM_RUN will load; and an exception queued for the entry comes
// first, while an interrupt queued with KVM_INTERRUPT for that same entry
// is not injected and is cleared at the next exit (an acknowledged vector
// lost for good). Then govmm asks for an interrupt window instead.
func interruptAllowed(run *kvm.Run, exceptionQueued bool) bool {
	const rflagsIF = 1 << 9
	switch {
	case exceptionQueued, run.ReadyForInterruptInjection == 0:
		return false
	case run.DirtyRegs&kvm.SyncRegsGPR != 0:
		return run.Sync.Regs.RFLAGS&rflagsIF != 0
	}
	return run.IFFlag != 0
}

// queuedBitmap is the interrupt_bitmap that says what is queued for the
// next entry: the vector govmm injected now (it can only inject when
// nothing else is queued), else the exit's bitmap (whatever a handler left
// queued or, having withdrawn it, cleared).
func queuedBitmap(atExit [4]uint64, injected int) [4]uint64 {
	if injected < 0 {
		return atExit
	}
	var b [4]uint64
	b[injected/64] = 1 << (injected % 64)
	return b
}

// exitFor tells the observer that this vCPU's exit, for why, was made for
// vector vec (if fixed), which waits for it unacknowledged: an exit an
// interrupt cost its receiver.
func (v *VCPU) exitFor(fixed bool, vec uint8, why vlapic.ExitReason) {
	if fixed {
		v.obs.ExitFor(v.id, vec, why)
	}
}
