// This file holds what a vCPU's loop counts as it serves its exits and
// injections (vcpu.Counters, and the injections the Observer counts): one
// lock-free add each. It is named to sort after observer.go so that Go,
// which lays out a package's functions in the order of its files, puts
// their code beside the LAPIC observer's, the rest of what an exit's
// accounting runs: counters.go's cold code (snapshots) between them cost
// an IPI's steps a page of code more each in the nested AMD-V host
// (docs/exit-cost.md).

package accounting

import (
	"sync/atomic"

	"github.com/govmm/govmm/exitcause"
)

// Inject counts one vector injected with KVM_INTERRUPT.
func (v *VCPU) Inject(vector uint8) {
	v.Injected.Add(1)
	v.InjectedVec[vector].Add(1)
}

// Withdraw takes back the count of an injection of vector that KVM never
// delivered (the VMM withdrew it and will inject it again).
func (v *VCPU) Withdraw(vector uint8) {
	v.Injected.Add(^uint64(0))
	v.InjectedVec[vector].Add(^uint64(0))
	v.Withdrawn.Add(1)
}

// Charge counts one exit of this vCPU, made for the reason why, to the
// interrupt of kind tag (from its trace, Observer): an IPI's destination
// kind, counted by kind and by why, or DeviceMSI, by why; any
// other tag charges nothing.
func (v *VCPU) Charge(tag uint8, why ChargeReason) {
	switch {
	case tag < uint8(NumIPIKinds):
		v.IPIRecvExits[tag].Add(1)
		byWhy(why, &v.IPIRecvHLT, &v.IPIRecvKick, &v.IPIRecvWindow, &v.IPIRecvEOI).Add(1)
	case tag == uint8(DeviceMSI):
		byWhy(why, &v.DeviceIRQHLT, &v.DeviceIRQKick, &v.DeviceIRQWindow, &v.DeviceIRQEOI).Add(1)
	}
}

// byWhy is the counter of the four that counts reason why.
func byWhy(why ChargeReason, hlt, kick, window, eoi *atomic.Uint64) *atomic.Uint64 {
	switch why {
	case ChargeHLT:
		return hlt
	case ChargeKick:
		return kick
	case ChargeWindow:
		return window
	default:
		return eoi
	}
}

// ExitTally hands the vCPU loop the Tally it counts its exits in. It and
// the methods below are the vCPU loop's counters (vcpu.Counters): each
// is one lock-free add.
func (v *VCPU) ExitTally() *exitcause.Tally { return &v.Exits }

// Woke counts a wake-up from HLT or wait-for-SIPI.
func (v *VCPU) Woke() { v.Wakeups.Add(1) }

// HaltPollBegan counts a halt poll as it begins; HaltPollEnded adds the
// host time it took.
func (v *VCPU) HaltPollBegan()             { v.HaltPolls.Add(1) }
func (v *VCPU) HaltPollEnded(nanos uint64) { v.HaltPollNanos.Add(nanos) }

// HaltPollHit counts a halt whose poll saw the wake-up.
func (v *VCPU) HaltPollHit() { v.HaltPollHits.Add(1) }

// KickSent counts a kick aimed at the vCPU; KickFailed one that could not
// be sent.
func (v *VCPU) KickSent()   { v.KicksSent.Add(1) }
func (v *VCPU) KickFailed() { v.KicksFailed.Add(1) }

// NMIInjected counts an NMI injected into the vCPU.
func (v *VCPU) NMIInjected() { v.NMIs.Add(1) }

// HostSignal counts a KVM_RUN a host signal ended with nothing for the
// guest.
func (v *VCPU) HostSignal() { v.HostSignals.Add(1) }

// SMI counts an SMI injected (taken) or dropped for want of SMM.
func (v *VCPU) SMI(taken bool) {
	if taken {
		v.SMIs.Add(1)
	} else {
		v.SMIsDropped.Add(1)
	}
}
