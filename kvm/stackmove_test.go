package kvm

import (
	"sync"
	"testing"
)

// grow calls f with depth small frames of stack in use below it, so that
// the call f makes into the ioctl wrappers finds the goroutine's stack at a
// different fill each time, and some of those calls make it grow (and
// move) on their way to the system call.
//
//go:noinline
func grow(depth int, f func()) {
	var pad [2]uint64
	if depth > 0 {
		grow(depth-1, f)
	} else {
		f()
	}
	pad[0]++
	_ = pad
}

// TestIoctlStructsSurviveStackMoves: KVM_GET_SREGS, KVM_GET_REGS and
// KVM_GET_MSRS fill structs on the caller's stack. The pointer must become
// a uintptr only in the argument list of the system call itself
// (unsafe.Pointer rule 4): converted earlier, as the argument of a Go
// function, it goes stale when the goroutine's stack moves on the way,
// and the kernel fills the old copy while the caller reads zeros (a 64-bit
// guest then looks like 16-bit code). Each read runs on a new goroutine,
// whose stack starts small, at many stack depths.
func TestIoctlStructsSurviveStackMoves(t *testing.T) {
	_, cs := testVCPUs(t, 1)
	c := cs[0]
	s, err := c.Sregs()
	if err != nil {
		t.Fatal(err)
	}
	s.CS = Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x10, Type: 0xB, Present: 1, S: 1, L: 1, G: 1}
	s.CR0, s.CR4, s.EFER = 0x80050033, 0x20, 0x500
	if err := c.SetSregs(s); err != nil {
		t.Fatal(err)
	}
	if err := c.SetRegs(Regs{RIP: 0xffffffff81000000, RFLAGS: 2, RAX: 0x1234}); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for depth := range 400 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			grow(depth, func() {
				got, err := c.Sregs()
				if err != nil || got.CS.Selector != 0x10 || got.CS.L != 1 || got.EFER != 0x500 {
					bad++
					if bad < 4 {
						t.Errorf("depth %d: KVM_GET_SREGS gave CS %+v EFER %#x (%v)", depth, got.CS, got.EFER, err)
					}
				}
				r, err := c.Regs()
				if err != nil || r.RIP != 0xffffffff81000000 || r.RAX != 0x1234 {
					bad++
					if bad < 4 {
						t.Errorf("depth %d: KVM_GET_REGS gave RIP %#x RAX %#x (%v)", depth, r.RIP, r.RAX, err)
					}
				}
			})
		}()
		wg.Wait()
	}
	if bad > 0 {
		t.Errorf("%d of 800 reads came back stale", bad)
	}
}
