// This file holds what the vCPU loop tells of itself: Counters, through
// which each exit's cause, each wake-up, halt poll, kick and NMI is
// counted by whoever implements it (accounting.VCPU in govmm), and
// NopCounters, which counts nothing. The loop imports no accounting: what
// it counts comes out through this interface and the LAPIC's observer
// (vlapic.Observer), never as counter types.

package vcpu

import "github.com/govmm/govmm/exitcause"

// Counters counts the vCPU loop's own events. An implementation must be
// cheap (one is called on every exit) and must not block.
//
// Concurrency: KickSent and KickFailed are called by whichever thread
// kicks the vCPU (Notify); every other method only by the vCPU's own
// thread.
type Counters interface {
	// ExitTally is where the loop counts the exits it serves, by cause
	// (asked once, at New). Its own, never nil.
	ExitTally() *exitcause.Tally
	// Woke counts a wake-up from HLT or wait-for-SIPI.
	Woke()
	// HaltPollBegan counts a halt poll as it begins (so that a poll in
	// progress is seen), HaltPollEnded the host time it took, and
	// HaltPollHit a halt whose poll saw the wake-up (the thread never
	// slept).
	HaltPollBegan()
	HaltPollEnded(nanos uint64)
	HaltPollHit()
	// KickSent counts a kick aimed at the vCPU in the guest (signal and
	// immediate_exit; AVIC's doorbell); KickFailed a kick signal that
	// could not be sent.
	KickSent()
	KickFailed()
	// HostSignal counts a KVM_RUN that a host signal (Go's preemption
	// SIGURG, let through with RawRun) ended with nothing for the guest:
	// no exit of the guest's.
	HostSignal()
	// NMIInjected counts an NMI KVM took (KVM_NMI).
	NMIInjected()
	// SMI counts an SMI the LAPIC accepted: taken by KVM (KVM_SMI), or
	// dropped because the VM has no SMM (the host's KVM offers none).
	SMI(taken bool)
}

// NopCounters counts nothing anyone reads: a loop without it runs the
// same (its exits go to a Tally of its own).
type NopCounters struct{}

func (NopCounters) ExitTally() *exitcause.Tally { return new(exitcause.Tally) }
func (NopCounters) Woke()                       {}
func (NopCounters) HaltPollBegan()              {}
func (NopCounters) HaltPollEnded(uint64)        {}
func (NopCounters) HaltPollHit()                {}
func (NopCounters) KickSent()                   {}
func (NopCounters) KickFailed()                 {}
func (NopCounters) HostSignal()                 {}
func (NopCounters) NMIInjected()                {}
func (NopCounters) SMI(bool)                    {}
