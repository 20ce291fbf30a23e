package vcpu

import (
	"strings"
	"testing"

	"github.com/govmm/govmm/kvm"
)

func TestEventLogString(t *testing.T) {
	var l eventLog
	if got := l.String(); got != "none" {
		t.Errorf("empty log %q, want none", got)
	}
	l.add(evExit, kvm.ExitIO, 0x1000)
	l.add(evKick, 0, 0x1002)
	l.add(evINIT, 1, 0x1004)
	l.add(evSIPI, 8, 0)
	l.add(evNMI, 0, 0x4)
	l.add(evInject, 0xEC, 0x4)
	want := "exit 2@0x1000, kick@0x1002, INIT(+1)@0x1004, SIPI 0x8@0x0, NMI@0x4, inject 0xec@0x4"
	if got := l.String(); got != want {
		t.Errorf("log %q, want %q", got, want)
	}
	// Past its length the log keeps the newest and says how many it dropped.
	for i := range 2 * eventLogLen {
		l.add(evExit, uint32(i), uint64(i))
	}
	got := l.String()
	if !strings.HasPrefix(got, "exit 32@0x20, ") || !strings.HasSuffix(got, "exit 63@0x3f (the last 32 of 70)") {
		t.Errorf("wrapped log %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { l.add(evExit, 1, 2) }); n != 0 {
		t.Errorf("add allocates %v times", n)
	}
}

// lastExit finds the newest exit behind later events, also once the log
// has wrapped, and nothing in a log without exits.
func TestEventLogLastExit(t *testing.T) {
	var l eventLog
	if _, ok := l.lastExit(); ok {
		t.Error("empty log: an exit found")
	}
	l.add(evSIPI, 8, 0)
	if _, ok := l.lastExit(); ok {
		t.Error("SIPI only: an exit found")
	}
	l.add(evExit, kvm.ExitMMIO, 0x10)
	l.add(evExit, kvm.ExitHLT, 0x20)
	l.add(evKick, 0, 0x21)
	l.add(evInject, 0x40, 0x21)
	if r, ok := l.lastExit(); !ok || r != kvm.ExitHLT {
		t.Errorf("lastExit %d %v, want HLT (%d)", r, ok, kvm.ExitHLT)
	}
	for i := range 3 * eventLogLen {
		l.add(evExit, uint32(i), 0)
	}
	for range eventLogLen - 1 {
		l.add(evNMI, 0, 0)
	}
	if r, ok := l.lastExit(); !ok || r != 3*eventLogLen-1 {
		t.Errorf("wrapped: lastExit %d %v, want %d", r, ok, 3*eventLogLen-1)
	}
	l.add(evNMI, 0, 0)
	if r, ok := l.lastExit(); ok {
		t.Errorf("wrapped, only NMIs kept: lastExit %d, want none", r)
	}
}

// lastSIPI finds a SIPI followed by no exit but the one being reported.
func TestEventLogLastSIPI(t *testing.T) {
	var l eventLog
	l.add(evExit, kvm.ExitMMIO, 0x10)
	l.add(evINIT, 0, 0x10)
	l.add(evSIPI, 8, 0)
	if v, ok := l.lastSIPI(); !ok || v != 8 {
		t.Errorf("SIPI last: %#x %v, want 0x8", v, ok)
	}
	l.add(evExit, kvm.ExitShutdown, 0x15)
	if v, ok := l.lastSIPI(); !ok || v != 8 {
		t.Errorf("SIPI, then the reported exit: %#x %v, want 0x8", v, ok)
	}
	l.add(evExit, kvm.ExitIO, 0x20)
	if _, ok := l.lastSIPI(); ok {
		t.Error("an exit after the SIPI's run: a SIPI found")
	}
}

// parkedByINIT holds only while the INIT is the newest event.
func TestEventLogParkedByINIT(t *testing.T) {
	var l eventLog
	if l.parkedByINIT() {
		t.Error("empty log: parked")
	}
	l.add(evExit, kvm.ExitX86WRMSR, 0x10)
	l.add(evINIT, 0, 0x12)
	if !l.parkedByINIT() {
		t.Error("INIT last: not parked")
	}
	l.add(evSIPI, 8, 0)
	if l.parkedByINIT() {
		t.Error("SIPI after the INIT: parked")
	}
}

// An emulation failure govmm cannot complete names what the vCPU did
// before it: here the exit before, the vector injected after it, and the
// failure's own exit.
func TestEmulationFailureNamesLastEvents(t *testing.T) {
	r := newRig(t, 1)
	fail := open(kvm.ExitInternalError).with(func(f *fakeCPU) {
		f.internal.Suberror = kvm.InternalErrorEmulation
		f.emul = kvm.EmulationFailure{Suberror: kvm.InternalErrorEmulation, Flags: kvm.EmulationFlagInsnBytes, InsnSize: 2}
		copy(f.emul.InsnBytes[:], []byte{0x0F, 0x0B}) // ud2: nothing govmm completes
		f.regs.RIP = 0x2000
	})
	r.fakes[0] = newFake(outb(0x80, 1), fail)
	r.build()
	r.deliver(0, 0x41)
	err := r.cpus[0].Run()
	if err == nil || !strings.Contains(err.Error(), "KVM could not emulate") {
		t.Fatalf("vCPU loop ended with %v, want the emulation failure", err)
	}
	if want := "last events: exit 2@0x1000, inject 0x41@0x1000, exit 17@0x2000"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
}
