// This file holds a guest's shutdown (triple fault or reset): its error,
// and what its message says of the state the guest died in. It is kept
// apart from the exit dispatch (loop_exits.go) so that the loop's code
// stays on few pages (see loop.go).

package vcpu

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govmm/govmm/complete"
)

// ErrShutdown is wrapped by the error of a vCPU the guest shut down (a
// triple fault) or reset (INIT to the BSP, bspINIT): an architectural end
// of the VM, not a failure of govmm.
var ErrShutdown = errors.New("shutdown")

type shutdownError string

func (e shutdownError) Error() string   { return string(e) }
func (e shutdownError) Is(t error) bool { return t == ErrShutdown }

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

// shutdownSegments is what a triple fault's message adds where the state
// is still the guest's (not on AMD): CR0, CS, the GDTR and GDT entry 1
// (selector 0x08, which govmm's test guests' trampoline jumps to), the
// usual suspects of a fault that could not be delivered (a far jump into
// protected mode through a bad GDT, seen in the VT-x fuzz's trampoline).
// Empty if the state cannot be read.
func (v *VCPU) shutdownSegments() string {
	s, err := v.sregs()
	if err != nil {
		return ""
	}
	msg := fmt.Sprintf(" (CR0 %#x, CS %#x base %#x, GDTR base %#x limit %#x", s.CR0, s.CS.Selector, s.CS.Base, s.GDT.Base, s.GDT.Limit)
	if v.mem != nil {
		if b, err := complete.GuestBytes(v.mem, s, s.GDT.Base+8, 8); err == nil {
			msg += fmt.Sprintf(", GDT entry 1 %#016x", binary.LittleEndian.Uint64(b))
		}
	}
	return msg + ")"
}

// sipiPageBytes is what a triple fault's message adds for a vCPU that
// faulted in the code its SIPI started it at, with no exit since: that
// code's first bytes as they are now (a trampoline the guest's own DMA
// overwrote shows here; an intact one points elsewhere). Empty otherwise.
func (v *VCPU) sipiPageBytes() string {
	vec, ok := v.log.lastSIPI()
	if !ok || v.mem == nil {
		return ""
	}
	const n = 32
	b, err := v.mem.Slice(uint64(vec)<<12, n)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("; the %d bytes at its SIPI page %#x now: % x", n, uint64(vec)<<12, b)
}
