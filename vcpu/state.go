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
	// wake-up word (a futex, loop_wake.go) until an interrupt it can take
	// arrives.
	StateHalted
	// StateWaitSIPI: after INIT (and for APs from reset) the vCPU waits for
	// a Startup IPI; only INIT, SIPI and the VM's end wake it.
	StateWaitSIPI
	// StateStopped: the loop has returned.
	StateStopped
	// StateParked: the loop is parked on request (park.go), its state
	// saved; Notify does nothing (what arrives is seen on release).
	StateParked
)

var stateNames = [...]string{"vmm", "guest", "halted", "wait-for-sipi", "stopped", "parked"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state%d", uint32(s))
}
