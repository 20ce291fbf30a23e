// This file converts a parked vCPU's saved state between the two LAPICs
// (govmm restore --lapic): a vCPU saved on govmm's LAPIC goes on on KVM's,
// and back. What moves is where the two keep the same facts:
//
//	fact                          govmm's LAPIC              KVM's LAPIC
//	registers, vectors, timer     vlapic.Saved               register page (TMCCT: time left)
//	TSC deadline                  vlapic.Saved               MSR IA32_TSC_DEADLINE
//	halted, waiting for SIPI      the loop's state (Loop)    MP state
//	a latched NMI, SMI, SIPI      vlapic.Events              vCPU events, MP state
//	PV EOI's MSR                  Saved.PVEOI                Saved.PVEOI (KVM's MSR)
//
// An INIT or ExtINT latched and not yet acted on has no place in KVM's
// saved state (KVM keeps a pending INIT only inside SMM, as latched_init):
// such a state is refused with one line, and a snapshot taken a moment
// later has none.

package vcpu

import (
	"fmt"
	"math/bits"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// KVM's limit on NMIs pending (process_nmi: one to inject, one latched).
const kvmMaxNMIsPending = 2

// OnKVMLAPIC returns s, a vCPU saved on govmm's LAPIC whose state was l,
// as the same vCPU's state on KVM's LAPIC, with x2APIC ID id (its KVM
// vCPU ID).
func OnKVMLAPIC(s Saved, l vlapic.Saved, id uint32) (Saved, error) {
	if s.KVMLAPIC != nil {
		return s, fmt.Errorf("vCPU %d: its state is KVM's LAPIC's already", id)
	}
	ev := mergeEvents(s.Events, l.Events)
	switch {
	case ev.ExtINT:
		return s, fmt.Errorf("vCPU %d has an ExtINT latched, which KVM's saved state has no place for: snapshot again", id)
	case ev.INIT && s.Loop != LoopWaitSIPI:
		return s, fmt.Errorf("vCPU %d has an INIT latched, which KVM's saved state has no place for: snapshot again", id)
	}
	k := &s.KVM
	k.Events.NMI.Pending = min(k.Events.NMI.Pending+ev.NMIs, kvmMaxNMIsPending)
	if ev.SMI {
		k.Events.SMI.Pending = 1
	}
	switch s.Loop {
	case LoopRunning:
		k.MPState = kvm.MPStateRunnable
	case LoopHalted:
		k.MPState = kvm.MPStateHalted
	case LoopWaitSIPI:
		// govmm's AP waits for a SIPI from reset on; KVM's takes one only
		// after INIT (KVM_MP_STATE_INIT_RECEIVED).
		k.MPState = kvm.MPStateInitReceived
		if ev.SIPI {
			k.MPState, k.Events.SIPIVector = kvm.MPStateSIPIReceived, uint32(ev.SIPIVector)
		}
	default:
		return s, fmt.Errorf("vCPU %d: saved loop state %d is none of running, halted or waiting for SIPI", id, s.Loop)
	}
	// A SIPI to a CPU that is not waiting for one is ignored, on either
	// LAPIC.
	k.Sregs.APICBase = l.Base
	dl := uint64(0)
	if l.Timer.Armed && l.TimerMode() == vlapic.TimerTSCDeadline {
		dl = l.Timer.TSCDeadline
	}
	s.KVMLAPIC = &KVMLAPIC{Page: l.KVMPage(id), TSCDeadline: dl}
	s.Loop, s.HaltIF, s.Events = LoopRunning, false, vlapic.Events{}
	return s, nil
}

// OnGovmmLAPIC returns s, a vCPU saved on KVM's LAPIC, as the same
// vCPU's state on govmm's LAPIC and that LAPIC's state. tscHz is the
// guest's TSC frequency, which turns a TSC deadline into time left.
func OnGovmmLAPIC(s Saved, tscHz uint64) (Saved, vlapic.Saved, error) {
	if s.KVMLAPIC == nil {
		return s, vlapic.Saved{}, fmt.Errorf("its state has no KVM LAPIC page")
	}
	k := &s.KVM
	l, err := vlapic.SavedFromKVMPage(s.KVMLAPIC.Page, k.Sregs.APICBase)
	if err != nil {
		return s, l, err
	}
	if k.Events.SMI.LatchedInit != 0 {
		return s, l, fmt.Errorf("an INIT is latched inside SMM, which govmm's LAPIC does not hold: snapshot again")
	}
	if dl := s.KVMLAPIC.TSCDeadline; dl != 0 && l.TimerMode() == vlapic.TimerTSCDeadline {
		tsc, ok := savedMSR(s.KVM, 0x10)
		if !ok || tscHz == 0 {
			return s, l, fmt.Errorf("a TSC deadline with no saved TSC (or frequency) to count it from")
		}
		l.Timer.Armed, l.Timer.TSCDeadline = true, dl
		if dl > tsc {
			hi, lo := bits.Mul64(dl-tsc, 1e9)
			if hi >= tscHz {
				return s, l, fmt.Errorf("TSC deadline %#x is out of reach of TSC %#x", dl, tsc)
			}
			q, _ := bits.Div64(hi, lo, tscHz)
			l.Timer.RemainingNS = int64(min(q, 1<<62))
		}
	}
	s.Loop, s.HaltIF, s.Events = LoopRunning, false, vlapic.Events{}
	switch k.MPState {
	case kvm.MPStateRunnable:
	case kvm.MPStateHalted:
		s.Loop, s.HaltIF = LoopHalted, k.Regs.RFLAGS&(1<<9) != 0
	case kvm.MPStateUninitialized, kvm.MPStateInitReceived:
		s.Loop = LoopWaitSIPI
	case kvm.MPStateSIPIReceived:
		s.Loop, s.Events.SIPI, s.Events.SIPIVector = LoopWaitSIPI, true, uint8(k.Events.SIPIVector)
	default:
		return s, l, fmt.Errorf("KVM's MP state %d is none govmm's LAPIC has", k.MPState)
	}
	k.MPState = kvm.MPStateRunnable
	s.KVMLAPIC = nil
	return s, l, nil
}

// mergeEvents is the loop's latched events and its LAPIC's, one set.
func mergeEvents(a, b vlapic.Events) vlapic.Events {
	e := a
	e.NMIs = min(a.NMIs+b.NMIs, vlapic.MaxLatchedNMIs)
	e.INIT, e.ExtINT, e.SMI = a.INIT || b.INIT, a.ExtINT || b.ExtINT, a.SMI || b.SMI
	if b.SIPI {
		e.SIPI, e.SIPIVector = true, b.SIPIVector
	}
	return e
}

// savedMSR is MSR index's value in s.
func savedMSR(s kvm.VCPUState, index uint32) (uint64, bool) {
	for _, m := range s.MSRs {
		if m.Index == index {
			return m.Data, true
		}
	}
	return 0, false
}
