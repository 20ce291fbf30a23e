// This file holds Hardware: what the loop asks of a KVM vCPU, so that a
// fake can stand in for it in tests.

package vcpu

import (
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/kvm"
)

// Hardware is the virtual CPU that the loop drives: exactly what package
// vcpu asks of a KVM vCPU. *kvm.VCPU is the real one; the package's unit
// tests drive the loop through a scripted fake, with no /dev/kvm.
//
// Everything is called on the vCPU's own thread, except SetImmediateExit,
// which Notify calls from any thread (the kick).
type Hardware interface {
	// exitbus.KVM is what the handlers on the exit bus use: RunData (this
	// exit's kvm_run), SetRegs, GetMSR and SetMSR.
	exitbus.KVM

	// Run enters the guest once (KVM_RUN); EINTR is returned as is.
	// RunRaw does the same without Go's entersyscall (kvm.VCPU.RunRaw):
	// the user-space LAPIC's loop uses it with Config.RawRun; the
	// in-kernel LAPIC's loop, whose KVM_RUN halts, always uses Run.
	Run() error
	RunRaw() error
	SetImmediateExit(on bool)
	SetRequestInterruptWindow(on bool)
	Interrupt(vector uint8) error
	NMI() error
	SMI() error
	Events() (kvm.VCPUEvents, error)
	SetEvents(e kvm.VCPUEvents) error
	Sregs() (kvm.Sregs, error)
	SetSregs(s kvm.Sregs) error
	// SaveState reads the vCPU's whole state for a snapshot (park.go);
	// RestoreState writes it back (resume).
	SaveState(msrs []uint32, xsaveSize int) (kvm.VCPUState, error)
	RestoreState(s kvm.VCPUState) error

	// The exit payloads, inside kvm_run.
	IO() (*kvm.IOExit, []byte)
	MMIO() *kvm.MMIOExit
	MSR() *kvm.MSRExit
	Internal() *kvm.InternalExit
	EmulationFailure() *kvm.EmulationFailure
	FailEntry() *kvm.FailEntryExit
	SystemEvent() *kvm.SystemEventExit

	XSAVE(buf []byte) error
	SetXSAVE(buf []byte) error
	XCR0() (uint64, error)
	SetXCR0(v uint64) error

	// SetDebugRegs is KVM_SET_DEBUGREGS (INIT resets DR0-DR7).
	SetDebugRegs(d kvm.DebugRegs) error
}

var _ Hardware = (*kvm.VCPU)(nil)
