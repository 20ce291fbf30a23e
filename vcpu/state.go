// Package vcpu runs one virtual CPU: a goroutine locked to its OS thread that
// enters the guest with KVM_RUN, dispatches every exit to govmm's devices and
// local APIC, injects interrupts, sleeps while the guest halts and counts
// every exit in the accounting.
//
// The path of an IPI through this package: the guest's ICR write exits
// (MMIO or WRMSR) -> handleMMIO/handleMSR -> exitbus -> vlapic -> the target LAPIC's IRR
// (with AVIC-style delivery: its IRR backing page, no target lock) ->
// vlapic.Sink.Notify -> VCPU.Notify on the target (kick or wake) -> the
// target's loop, which folds the backing page as it looks for a vector ->
// inject (KVM_INTERRUPT). docs/ipi-path.md walks it function by function.
//
// Measurement is not on that path: the LAPICs and the loop tell their
// observer (vlapic.Observer, the LAPIC's: accounting.Observer in govmm)
// of injections and of the exits made for an interrupt (HLT, kick,
// window), and nothing they do depends on it; the loop counts its own
// exits by cause and its kicks, wake-ups and halt polls (Config.Acct).
//
// The loop asks the KVM vCPU for nothing but Hardware (a *kvm.VCPU in
// govmm), so its unit tests (loop_test.go) run it on a scripted fake
// (fake_test.go) with real LAPICs, accounting and exit bus, no /dev/kvm.
package vcpu

import "fmt"

// State is where a vCPU is. Notify reads it to decide between doing nothing,
// kicking and waking; the dashboard reads it too. Only the vCPU's own thread
// writes it.
type State uint32

const (
	// StateVMM: the thread is in govmm handling an exit; it checks for new
	// interrupts before it enters the guest again, so no kick is needed.
	StateVMM State = iota
	// StateGuest: about to enter or inside KVM_RUN. A new interrupt needs a
	// kick: immediate_exit plus a signal to the thread.
	StateGuest
	// StateHalted: the guest executed HLT; the thread sleeps on its
	// wake-up word (a futex, wake.go) until an interrupt it can take
	// arrives.
	StateHalted
	// StateWaitSIPI: after INIT (and for APs from reset) the vCPU waits for
	// a Startup IPI; only INIT, SIPI and the VM's end wake it.
	StateWaitSIPI
	// StateStopped: the loop has returned.
	StateStopped
)

var stateNames = [...]string{"vmm", "guest", "halted", "wait-for-sipi", "stopped"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state%d", uint32(s))
}
