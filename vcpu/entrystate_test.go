package vcpu

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// The injection decision uses the state the next KVM_RUN will load, not
// the exit's: a completed SYSCALL masked IF, a queued exception comes
// first (an interrupt queued beside it would be dropped by KVM).
func TestInterruptAllowedAfterEdits(t *testing.T) {
	const ifFlag = 1 << 9
	for _, c := range []struct {
		name      string
		ready, IF uint8
		dirty     uint64
		rflags    uint64
		exception bool
		want      bool
	}{
		{"as at the exit", 1, 1, 0, ifFlag, false, true},
		{"IF clear at the exit", 1, 0, 0, 0, false, false},
		{"not ready at the exit", 0, 1, 0, ifFlag, false, false},
		{"doorbell masked IF", 1, 1, kvm.SyncRegsGPR | kvm.SyncRegsSregs, 0x2, false, false},
		{"handler set IF", 1, 0, kvm.SyncRegsGPR, ifFlag | 2, false, true},
		{"RIP moved, IF kept", 1, 1, kvm.SyncRegsGPR, ifFlag | 2, false, true},
		{"exception queued", 1, 1, 0, ifFlag, true, false},
	} {
		var run kvm.Run
		run.ReadyForInterruptInjection, run.IFFlag, run.DirtyRegs = c.ready, c.IF, c.dirty
		run.Sync.Regs.RFLAGS = c.rflags
		if got := interruptAllowed(&run, c.exception); got != c.want {
			t.Errorf("%s: allowed = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestQueuedBitmap(t *testing.T) {
	stale := [4]uint64{0, 1 << 3, 0, 0} // vector 0x43 queued at the exit
	if got := queuedBitmap(stale, -1); got != stale {
		t.Errorf("nothing injected: %x, want the exit's %x", got, stale)
	}
	if got := queuedBitmap([4]uint64{}, 0xec); got != [4]uint64{0, 0, 0, 1 << (0xec - 192)} {
		t.Errorf("0xec injected: %x", got)
	}
}

func TestShutdownMessage(t *testing.T) {
	if got := shutdownMessage(false, 0x1234, 0x1000); got != "guest triple fault (shutdown) at RIP 0x1234" {
		t.Errorf("Intel: %q", got)
	}
	if got := shutdownMessage(true, 0xfff0, 0x1000); got != "guest triple fault (shutdown) at an unknown RIP (on AMD KVM resets the VMCB first); the exit before it was at RIP 0x1000" {
		t.Errorf("AMD: %q", got)
	}
}

func TestKickRetriesEAGAINAndCountsFailures(t *testing.T) {
	var acct accounting.VCPU
	v := &VCPU{counts: &acct, pid: 1}
	calls := 0
	v.testTgkill = func(pid, tid int, sig unix.Signal) error {
		calls++
		if calls < 3 {
			return unix.EAGAIN
		}
		return nil
	}
	v.kick(7)
	if calls != 3 || acct.KicksFailed.Load() != 0 {
		t.Errorf("EAGAIN twice then success: %d calls, %d failures; want 3, 0", calls, acct.KicksFailed.Load())
	}
	calls = 0
	v.testTgkill = func(pid, tid int, sig unix.Signal) error { calls++; return unix.ESRCH }
	v.kick(7)
	if calls != 1 || acct.KicksFailed.Load() != 1 {
		t.Errorf("ESRCH: %d calls, %d failures; want 1, 1", calls, acct.KicksFailed.Load())
	}
	calls = 0
	v.testTgkill = func(pid, tid int, sig unix.Signal) error { calls++; return unix.EAGAIN }
	v.kick(7)
	if calls != kickTries || acct.KicksFailed.Load() != 2 {
		t.Errorf("EAGAIN forever: %d calls, %d failures; want %d, 2", calls, acct.KicksFailed.Load(), kickTries)
	}
}

// A SIPI reaches only a CPU that waits for one: a running CPU discards it,
// a CPU with an INIT to act on or in wait-for-SIPI keeps it.
func TestSIPIOnlyWhileWaiting(t *testing.T) {
	bus := vlapic.NewBus(2, nil, nil, vlapic.Options{})
	send := func(mode vlapic.DeliveryMode, vec uint8) {
		bus.Deliver(vlapic.Message{Delivery: mode, Vector: vec, Assert: true, Dest: 1, Source: 0})
	}
	v := &VCPU{lapic: bus.LAPIC(1)}
	v.state.Store(uint32(StateGuest))
	send(vlapic.StartUp, 0x10)
	v.takeEvents()
	if v.events.SIPI {
		t.Errorf("a running CPU kept a SIPI")
	}
	send(vlapic.INIT, 0)
	send(vlapic.StartUp, 0x20)
	v.takeEvents()
	if !v.events.INIT || !v.events.SIPI || v.events.SIPIVector != 0x20 {
		t.Errorf("INIT then SIPI: %+v, want both with vector 0x20", v.events)
	}
	v.events = vlapic.Events{}
	v.state.Store(uint32(StateWaitSIPI))
	send(vlapic.StartUp, 0x30)
	v.takeEvents()
	if !v.events.SIPI || v.events.SIPIVector != 0x30 {
		t.Errorf("waiting for SIPI: %+v, want vector 0x30", v.events)
	}
}

// On VMX a triple fault's message carries CR0, CS, the GDTR and the GDT
// entry a far jump to selector 0x08 would load, read from guest memory.
func TestShutdownSegments(t *testing.T) {
	r := newRig(t, 1)
	m, ram := guestRAM(t)
	f := newFake()
	f.sregs.CR0 = 0x11
	f.sregs.CS = kvm.Segment{Selector: 0x800, Base: 0x8000}
	f.sregs.GDT = kvm.DTable{Base: 0x1000, Limit: 0x17}
	binary.LittleEndian.PutUint64(ram[0x1008:], 0x00cf9a000000ffff)
	v := New(0, Config{KVM: f, LAPIC: r.apics.LAPIC(0), Bus: &r.bus, Clock: r.clock, Mem: m, Done: r.done})
	want := " (CR0 0x11, CS 0x800 base 0x8000, GDTR base 0x1000 limit 0x17, GDT entry 1 0x00cf9a000000ffff)"
	if got := v.shutdownSegments(); got != want {
		t.Errorf("shutdownSegments() = %q, want %q", got, want)
	}
}
