// This file holds parking: a vCPU stopped on request at a point where its
// state is whole, saved on its own thread, and held there until released.
// A snapshot parks every vCPU (and so the guest) before it saves anything.
//
// A vCPU parks where its loop checks for the request: before an entry
// (running), in a halt's wait (halted) and in the wait for a Startup IPI.
// Before an entry, the exit it has just served may have left an
// instruction half done (a port or MMIO read whose data KVM puts in place
// at the next KVM_RUN, a string instruction's next round): KVM_RUN with
// immediate_exit completes it and returns at once (KVM's API: "the
// operation is complete, and guest state consistent, only after
// re-entering KVM_RUN"; QEMU does the same before saving), serving any
// further exit it needs. Nothing is injected first: a vector the LAPIC
// holds stays there, in the LAPIC's saved state.

package vcpu

import (
	"errors"
	"fmt"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// LoopState is where a parked vCPU's loop was, which is where a restored
// one resumes.
type LoopState uint8

const (
	LoopRunning  LoopState = iota // between exits: the next step is an entry
	LoopHalted                    // in a HLT, waiting for what ends it
	LoopWaitSIPI                  // after INIT (or from reset), waiting for a Startup IPI
)

// Saved is a parked vCPU's state: KVM's (nil-free for a vCPU on either
// LAPIC) and its loop's.
type Saved struct {
	Loop LoopState
	// HaltIF: the HLT was executed with RFLAGS.IF set (a vector ends it).
	HaltIF bool
	// Events are those the loop latched from its LAPIC and has not acted
	// on yet (an INIT, SIPI, NMI or SMI).
	Events vlapic.Events
	KVM    kvm.VCPUState
	// PVEOI is MSR_KVM_PV_EOI_EN as the guest last wrote it (0: PV EOI
	// off), on either LAPIC. On govmm's, the offer for the vector in
	// service is taken back when the vCPU parks, as KVM does at every exit
	// (apic_sync_pv_eoi_from_guest): the guest's EOI of it is then a real
	// one, and nothing of PV EOI is in flight.
	PVEOI uint64 `json:",omitempty"`
	// KVMLAPIC is KVM's in-kernel LAPIC (--lapic=kvm); nil on govmm's,
	// whose state its package saves (vlapic.Saved).
	KVMLAPIC *KVMLAPIC `json:",omitempty"`
}

// KVMLAPIC is KVM's in-kernel LAPIC as a snapshot holds it: the register
// page (KVM_GET_LAPIC, the timer's time left in TMCCT) and MSR
// IA32_TSC_DEADLINE, which KVM keeps apart from the page (0 when the timer
// is not in TSC-deadline mode, or has fired).
type KVMLAPIC struct {
	Page        []byte
	TSCDeadline uint64
}

// Parking is one request that a vCPU park.
type Parking struct {
	parked  chan struct{}
	release chan struct{}
	// Saved and Err are set before Parked's channel closes.
	Saved Saved
	Err   error
}

// Parked is closed once the vCPU is parked with its state in Saved (or
// Err), or has ended without parking (Err says so).
func (p *Parking) Parked() <-chan struct{} { return p.parked }

// Release lets the parked vCPU go on.
func (p *Parking) Release() { close(p.release) }

// ErrNotParked is Parking.Err for a vCPU whose loop ended first.
var ErrNotParked = errors.New("the vCPU's loop ended before it parked")

// Park asks the vCPU to park at its next parking point; wait on Parked,
// then Release. One request at a time: a second one before the first is
// served is refused.
func (v *VCPU) Park() (*Parking, error) {
	p := &Parking{parked: make(chan struct{}), release: make(chan struct{})}
	if !v.parkReq.CompareAndSwap(nil, p) {
		return nil, fmt.Errorf("vCPU %d: already asked to park", v.id)
	}
	v.Notify()
	if v.State() == StateStopped {
		// As RequestDump: the loop has returned, or serves requests on
		// its way out; the swap decides.
		v.failParkOnStop()
	}
	return p, nil
}

// maybePark serves a park request at one of the loop's parking points.
// It returns errStop if the VM ended while the vCPU was parked. A state
// that could not be saved is the requester's failure (Parking.Err: the
// snapshot fails with it), and the vCPU goes on.
func (v *VCPU) maybePark(loop LoopState, haltIF bool) error {
	// A request made while the vCPU was parked found it so (Notify kicks
	// and wakes nothing then): it is served here, before the vCPU goes on.
	for v.parkReq.Load() != nil {
		if err := v.park(loop, haltIF); err != nil {
			return err
		}
	}
	return nil
}

// parkSoon makes the coming KVM_RUN return at once, for a park request.
func (v *VCPU) parkSoon() { v.kvm.SetImmediateExit(true) }

// park serves one park request, if one is still there.
func (v *VCPU) park(loop LoopState, haltIF bool) error {
	p := v.parkReq.Swap(nil)
	if p == nil {
		return nil
	}
	p.Saved = Saved{Loop: loop, HaltIF: haltIF, Events: v.events}
	if err := v.completeIO(); err != nil {
		p.Err = err
	} else {
		p.Saved.KVM, p.Err = v.kvm.SaveState(kvm.SnapshotMSRs, v.xsaveSize)
	}
	if p.Err == nil {
		p.Err = v.saveAPIC(&p.Saved)
	}
	prev := v.state.Swap(uint32(StateParked))
	close(p.parked)
	select {
	case <-p.release:
	case <-v.done:
	}
	v.state.Store(prev)
	// The LAPIC may have been restored or handed over while the vCPU was
	// parked, with no Notify: the next entry looks (quietEntry).
	v.quiet = false
	if v.stopped() {
		return errStop
	}
	return nil
}

// completeIO finishes what the last exit left half done: KVM_RUN with
// immediate_exit set completes an emulated access and returns EINTR
// without entering the guest. A string instruction may need another
// round of its exit first, which is served like any exit.
func (v *VCPU) completeIO() error {
	run := v.kvm.RunData()
	for range maxCompletionRounds {
		v.kvm.SetImmediateExit(true)
		err := v.kvm.Run()
		v.kvm.SetImmediateExit(false)
		if endedWithoutExit(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("completing the last exit before parking: KVM_RUN: %w", err)
		}
		v.log.add(evExit, run.ExitReason, run.Sync.Regs.RIP)
		if err := v.handleExit(run); err != nil {
			return fmt.Errorf("completing the last exit before parking: %w", err)
		}
	}
	return fmt.Errorf("completing the last exit before parking: still exiting after %d rounds", maxCompletionRounds)
}

// maxCompletionRounds bounds completeIO: a REP string instruction
// completes a page's worth of its accesses per exit.
const maxCompletionRounds = 4096

// failParkOnStop answers a request the loop will never serve (it is
// returning).
func (v *VCPU) failParkOnStop() {
	if p := v.parkReq.Swap(nil); p != nil {
		p.Err = ErrNotParked
		close(p.parked)
	}
}

// The MSRs of KVM's LAPIC kept apart from its page.
const (
	msrTSCDeadline = 0x6E0
	msrKVMPVEOI    = 0x4B564D04
)

// saveAPIC adds to s, on the parked vCPU's thread, what of its LAPIC the
// vCPU holds: PV EOI's MSR (govmm's offer taken back first), and KVM's
// LAPIC where it is in KVM.
func (v *VCPU) saveAPIC(s *Saved) error {
	if v.inKernel == nil {
		v.pvComplete()
		s.PVEOI = v.pveoi.MSR()
		return nil
	}
	page, err := v.inKernel.LAPIC()
	if err != nil {
		return err
	}
	dl, err := v.kvm.GetMSR(msrTSCDeadline)
	if err != nil {
		return fmt.Errorf("reading KVM's TSC_DEADLINE: %w", err)
	}
	// KVM refuses PV EOI's MSR to a guest whose CPUID does not offer it
	// (KVM_CAP_ENFORCE_PV_FEATURE_CPUID): PV EOI is then off.
	pv, err := v.kvm.GetMSR(msrKVMPVEOI)
	if err != nil {
		pv = 0
	}
	s.KVMLAPIC = &KVMLAPIC{Page: append([]byte(nil), page.Regs[:]...), TSCDeadline: dl}
	s.PVEOI = pv
	return nil
}

// restoreAPIC loads what saveAPIC saved, after KVM's state: KVM's LAPIC
// page after the special registers (KVM_SET_LAPIC takes the mode from
// APIC_BASE, which they hold), then the TSC deadline, which KVM takes only
// in TSC-deadline mode and reads against the TSC restored before it.
func (v *VCPU) restoreAPIC(s Saved) error {
	if v.inKernel == nil {
		if s.KVMLAPIC != nil {
			return errors.New("the saved state is of KVM's LAPIC, and this vCPU's is govmm's")
		}
		return v.pvRestore(s.PVEOI)
	}
	if s.KVMLAPIC == nil || len(s.KVMLAPIC.Page) != len(kvm.LAPICState{}.Regs) {
		return errors.New("the saved state has no register page for KVM's LAPIC")
	}
	var page kvm.LAPICState
	copy(page.Regs[:], s.KVMLAPIC.Page)
	if err := v.inKernel.SetLAPIC(page); err != nil {
		return err
	}
	if dl := s.KVMLAPIC.TSCDeadline; dl != 0 {
		if err := v.kvm.SetMSR(msrTSCDeadline, dl); err != nil {
			return fmt.Errorf("restoring KVM's TSC_DEADLINE: %w", err)
		}
	}
	if s.PVEOI != 0 {
		if err := v.kvm.SetMSR(msrKVMPVEOI, s.PVEOI); err != nil {
			return fmt.Errorf("restoring KVM's PV EOI MSR %#x: %w", s.PVEOI, err)
		}
	}
	return nil
}

// resumeSaved puts a restored vCPU where it was parked: KVM's state loaded
// on this thread, its LAPIC's part, the latched events back, and a vCPU
// that was halted or waiting for SIPI waiting again (the loop then enters
// as usual). It returns errStop if the VM ended while it waited.
func (v *VCPU) resumeSaved(s Saved) error {
	if err := v.kvm.RestoreState(s.KVM); err != nil {
		return fmt.Errorf("restoring the saved state: %w", err)
	}
	if err := v.restoreAPIC(s); err != nil {
		return fmt.Errorf("restoring the saved state: %w", err)
	}
	if v.restored != nil {
		v.restored()
	}
	v.events = s.Events
	switch s.Loop {
	case LoopRunning:
		return nil
	case LoopHalted:
		if !v.halt(s.HaltIF) {
			return errStop
		}
		return nil
	case LoopWaitSIPI:
		return v.waitSIPI()
	}
	return fmt.Errorf("saved loop state %d is none of running, halted or waiting for SIPI", s.Loop)
}
