package vcpu

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/pveoi"
	"github.com/govmm/govmm/pvsyscall"
	"github.com/govmm/govmm/vlapic"
)

// Unit tests of the vCPU loop on the scripted fake (fake_test.go): real
// LAPICs, accounting and exit bus, no /dev/kvm.

const rflagsIF = 1 << 9

// counters checks vCPU cpu's injection, wakeup and kick counters.
func (r *rig) counters(cpu int, injected, wakeups, kicksSent uint64) {
	r.t.Helper()
	c := &r.acct.CPUs[cpu]
	if g := c.Injected.Load(); g != injected {
		r.t.Errorf("vCPU %d: %d injected, want %d", cpu, g, injected)
	}
	if g := c.Wakeups.Load(); g != wakeups {
		r.t.Errorf("vCPU %d: %d wakeups, want %d", cpu, g, wakeups)
	}
	if g := c.KicksSent.Load(); g != kicksSent {
		r.t.Errorf("vCPU %d: %d kicks sent, want %d", cpu, g, kicksSent)
	}
	if g := c.KicksFailed.Load(); g != 0 {
		r.t.Errorf("vCPU %d: %d kicks failed", cpu, g)
	}
}

func wantInjected(t *testing.T, f *fakeCPU, want ...uint8) {
	t.Helper()
	if len(f.injected) != len(want) {
		t.Fatalf("KVM_INTERRUPT %#x, want %#x", f.injected, want)
	}
	for i := range want {
		if f.injected[i] != want[i] {
			t.Fatalf("KVM_INTERRUPT %#x, want %#x", f.injected, want)
		}
	}
}

// A pending vector is injected only when KVM says the guest can take it
// (ready_for_interrupt_injection and IF); until then the loop asks for an
// interrupt window.
func TestInjectOrWindow(t *testing.T) {
	r := newRig(t, 1)
	r.deliver(0, 0x40)
	f := newFake(
		exitAt(kvm.ExitIRQWindowOpen, true, false), // IF=0
		exitAt(kvm.ExitIRQWindowOpen, false, true), // not ready
		open(kvm.ExitIRQWindowOpen),
		outb(0x80, 0),
	)
	r.fakes[0] = f
	r.runOne()
	// The first entry has kvm_run as KVM leaves it before any KVM_RUN:
	// not ready. 0x40 in service hides nothing else: no window after it.
	wantEntries(t, f, e(true, -1), e(true, -1), e(true, -1), e(false, 0x40), e(false, -1))
	wantInjected(t, f, 0x40)
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.IRQWindow: 3, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 0)
	if n := r.acct.CPUs[0].InjectedVec[0x40].Load(); n != 1 {
		t.Errorf("vector 0x40 injected %d times", n)
	}
	if f.regs.RIP != 0x1000 || f.sigmask != loopSignalMask(false).Val[0] || f.sigmask&(1<<(unix.SIGURG-1)) == 0 || f.sigmask&(1<<(kickSignal-1)) != 0 {
		t.Errorf("boot state RIP %#x, signal mask %#x", f.regs.RIP, f.sigmask)
	}
}

// A handler that clears RFLAGS.IF in the registers KVM_RUN will load (as a
// completed SYSCALL does) closes the window, whatever the exit said.
func TestInjectDirtyRFLAGS(t *testing.T) {
	r := newRig(t, 1)
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 1, Name: "cli", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			run := a.VCPU.KVM().RunData()
			run.Sync.Regs.RFLAGS &^= rflagsIF
			run.DirtyRegs |= kvm.SyncRegsGPR
			r.deliver(0, 0x50)
			return nil
		})})
	// The guest runs with IF=1 until the handler.
	f := newFake(outb(0x90, 0).with(func(f *fakeCPU) { f.regs.RFLAGS |= rflagsIF }), open(kvm.ExitIRQWindowOpen))
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(true, -1), e(false, 0x50))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.Other: 1, exitcause.IRQWindow: 1})
	r.counters(0, 1, 0, 0)
}

// A vector that arrives while KVM still holds the last one (not ready)
// waits for the window, then nests above it.
func TestSecondVectorWaitsForWindow(t *testing.T) {
	r := newRig(t, 1)
	r.deliver(0, 0x40)
	held := outb(0x80, 0)
	held.ready, held.hold = false, true
	f := newFake(
		open(kvm.ExitIRQWindowOpen),
		held.with(func(*fakeCPU) { r.deliver(0, 0x60) }), // in the guest: kicks
		open(kvm.ExitIRQWindowOpen),
		outb(0x80, 0),
	)
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(true, -1), e(false, 0x40), e(true, 0x40), e(false, 0x60), e(false, -1))
	wantInjected(t, f, 0x40, 0x60)
	// The kick's immediate_exit was cleared after that KVM_RUN: no entry
	// saw it.
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.IRQWindow: 2, exitcause.PIOOther: 2})
	r.counters(0, 2, 0, 1)
	s := r.apics.LAPIC(0).Snapshot()
	if s.ISR[0x40/32] != 1<<(0x40%32) || s.ISR[0x60/32] != 1<<(0x60%32) || s.IRR != [8]uint32{} {
		t.Errorf("ISR %#x IRR %#x, want 0x40 and 0x60 in service", s.ISR, s.IRR)
	}
}

// HLT sleeps until an IPI sent from another goroutine wakes it (no exit,
// no kick); the vector is injected at the next entry.
func TestHaltWakeByIPI(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	r.deliver(0, 0x45)
	wait()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 1, 0)
}

// With IF=0 a vector does not end HLT; an NMI does, and the vector then
// waits for a window.
func TestHaltIFClearWakeByNMI(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(exitAt(kvm.ExitHLT, true, false), open(kvm.ExitIRQWindowOpen), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	r.deliver(0, 0x45)
	time.Sleep(20 * time.Millisecond)
	if s := r.cpus[0].State(); s != StateHalted {
		t.Fatalf("a vector with IF=0 ended HLT: state %v", s)
	}
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.NMI, Dest: 0, Source: -1})
	wait()
	wantEntries(t, f, e(false, -1), e(true, -1), e(false, 0x45), e(false, -1))
	if f.nmis != 1 || r.acct.CPUs[0].NMIs.Load() != 1 {
		t.Errorf("%d KVM_NMI, %d counted, want 1", f.nmis, r.acct.CPUs[0].NMIs.Load())
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 1, exitcause.IRQWindow: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 1, 0)
}

// The LAPIC timer ends HLT through the host timer the loop arms.
func TestHaltWakeByTimer(t *testing.T) {
	r := newRig(t, 1)
	a := r.apics.LAPIC(0)
	const ns = 20 * time.Millisecond
	a.WriteMMIO(uint64(vlapic.RegTimerDCR)<<4, []byte{0xB, 0, 0, 0}) // divide by 1: 1 count/ns
	a.WriteMMIO(uint64(vlapic.RegLVTTimer)<<4, []byte{0x30, 0, 0, 0})
	start := time.Now()
	a.WriteMMIO(uint64(vlapic.RegTimerICR)<<4, binary.LittleEndian.AppendUint32(nil, uint32(ns)))
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	wait()
	if d := time.Since(start); d < ns {
		t.Errorf("woken after %v, before the timer's %v", d, ns)
	}
	wantEntries(t, f, e(false, -1), e(false, 0x30), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 1, 0)
}

// A vector for a vCPU in the guest kicks it out (immediate_exit and the
// signal): an exit counted as a kick. A kick that finds nothing is
// kick_spurious. immediate_exit is cleared after each KVM_RUN.
func TestKick(t *testing.T) {
	r := newRig(t, 1)
	inGuest := step{waitKick: true, ready: true, ifFlag: true}
	f := newFake(inGuest, inGuest, outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	<-f.inGuest
	r.deliver(0, 0x45)
	<-f.inGuest
	r.cpus[0].Notify() // nothing new: 0x45 is in service
	wait()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, -1), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.Kick: 1, exitcause.KickSpurious: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 2)
	if f.immediate.Load() {
		t.Error("immediate_exit left set")
	}
}

// With RawRun, a host signal that is no kick (Go's preemption SIGURG,
// which the raw KVM_RUN lets through) and finds nothing is no exit of the
// guest's: counted apart, not as a kick or a spurious one, and the loop
// enters again with nothing lost. A vector a kick brings afterwards
// still costs exactly one kick exit. Every KVM_RUN is raw, with SIGURG
// unblocked on the thread and the host's other signals blocked.
func TestHostSignalIsNoExit(t *testing.T) {
	r := newRig(t, 1)
	r.rawRun = true
	inGuest := step{waitKick: true, ready: true, ifFlag: true}
	signal := step{signal: true, ready: true, ifFlag: true}
	f := newFake(signal, signal, inGuest, outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	<-f.inGuest
	r.deliver(0, 0x45)
	wait()
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, -1), e(false, 0x45), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.Kick: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 1)
	if n := r.acct.CPUs[0].HostSignals.Load(); n != 2 {
		t.Errorf("%d KVM_RUNs ended by a host signal, want 2", n)
	}
	urg, int_ := uint64(1)<<(unix.SIGURG-1), uint64(1)<<(unix.SIGINT-1)
	if f.rawRuns != len(f.entries) || f.sigmask&urg != 0 || f.sigmask&int_ == 0 {
		t.Errorf("%d of %d KVM_RUNs raw, signal mask %#x; want all, SIGURG let through, SIGINT blocked", f.rawRuns, len(f.entries), f.sigmask)
	}
}

// With RawRun, a host signal that ends KVM_RUN just before a vector's
// sender looks (it finds the vCPU out of the guest and sends no kick) is
// the vector's exit: the entry after it finds the vector and injects it,
// and the exit is counted as the kick a host without the signal would
// have needed, not as a host signal (TestIPIExitCounts' spinning
// receivers: one kick exit per interrupt taken while running).
func TestHostSignalBeforeKick(t *testing.T) {
	r := newRig(t, 1)
	r.rawRun = true
	post := step{signal: true, ready: true, ifFlag: true}.with(func(*fakeCPU) {
		r.muted.Store(true)
		r.deliver(0, 0x45)
		r.muted.Store(false)
	})
	f := newFake(post, outb(0x80, 0))
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, -1))
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.Kick: 1, exitcause.PIOOther: 1})
	if n := r.acct.CPUs[0].HostSignals.Load(); n != 0 {
		t.Errorf("%d KVM_RUNs counted as ended by a host signal, want 0 (it was the vector's exit)", n)
	}
}

// Without RawRun every EINTR is a kick's (the host's signals are blocked
// on the thread): one with nothing to deliver is a spurious kick exit.
func TestSignalWithoutRawRunIsKick(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(step{signal: true, ready: true, ifFlag: true}, outb(0x80, 0))
	r.fakes[0] = f
	r.runOne()
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.KickSpurious: 1, exitcause.PIOOther: 1})
	if f.rawRuns != 0 || r.acct.CPUs[0].HostSignals.Load() != 0 {
		t.Errorf("%d raw KVM_RUNs, %d host signals; want none", f.rawRuns, r.acct.CPUs[0].HostSignals.Load())
	}
}

// A kick that lands between the loop's last look and KVM_RUN makes
// KVM_RUN return at once (immediate_exit); a storm of notifications costs
// one kick.
func TestKickBeforeEntry(t *testing.T) {
	r := newRig(t, 1)
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 1, Name: "late", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			// As if the loop were already past prepareEntry: a Notify
			// now must not be lost.
			v := r.cpus[0]
			v.state.Store(uint32(StateGuest))
			r.deliver(0, 0x46)
			r.deliver(0, 0x45)
			v.Notify()
			return nil
		})})
	f := newFake(outb(0x90, 0), outb(0x80, 0))
	r.fakes[0] = f
	r.runOne()
	// Entry 1 injects 0x46 and KVM_RUN returns at once (immediate_exit):
	// the loop had seen the vector the kick was for, so the kick is
	// spurious (0x45 waits below 0x46), the one such exit the protocol
	// may cost. KVM still holds 0x46 (not ready): nothing is injected at
	// entry 2, and the guest takes 0x46 there.
	wantEntries(t, f, e(false, -1), entry{inject: 0x46, exception: -1, immediate: true}, e(false, 0x46), e(false, -1))
	wantInjected(t, f, 0x46)
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.Other: 1, exitcause.KickSpurious: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 1)
}

// An AP waits for INIT/SIPI and starts in real mode at vector << 8. A
// SIPI to a running vCPU is discarded (its kick finds nothing); INIT then
// SIPI restarts it.
func TestInitSIPI(t *testing.T) {
	r := newRig(t, 2)
	r.fakes[0] = newFake() // the BSP ends at once
	type at struct {
		cs   uint16
		base uint64
		rip  uint64
	}
	var seen []at
	rec := func(f *fakeCPU) { seen = append(seen, at{f.sregs.CS.Selector, f.sregs.CS.Base, f.regs.RIP}) }
	inGuest := step{waitKick: true, ready: true, ifFlag: true, guest: rec}
	f := newFake(inGuest, inGuest, outb(0x80, 0).with(rec))
	r.fakes[1] = f
	pv := &countPVEOI{}
	r.pveoi[1] = pv
	wait := r.start()
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 1, Source: -1})
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x9A, Dest: 1, Source: -1})
	<-f.inGuest
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x20, Dest: 1, Source: -1})
	<-f.inGuest
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 1, Source: -1})
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x30, Dest: 1, Source: -1})
	wait()
	want := []at{{0x9A00, 0x9A000, 0}, {0x9A00, 0x9A000, 0}, {0x3000, 0x30000, 0}}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Fatalf("CS:IP in the guest %+v, want %+v", seen, want)
	}
	// The third: INIT completes the exit it interrupted (completeExit).
	wantEntries(t, f, e(false, -1), e(false, -1), entry{inject: -1, exception: -1, immediate: true}, e(false, -1), e(false, -1))
	r.wantExits(1, map[exitcause.Cause]uint64{exitcause.KickSpurious: 1, exitcause.Kick: 1, exitcause.PIOOther: 1})
	r.counters(1, 0, 2, 2)
	if pv.reset != 1 {
		t.Errorf("PV EOI reset %d times at INIT, want 1", pv.reset)
	}
	r.wantExits(0, nil)
}

// countPVEOI counts the loop's PV EOI calls.
type countPVEOI struct {
	sync, complete, offer, retract, reset int
	msr                                   uint64
}

func (p *countPVEOI) Sync()         { p.sync++ }
func (p *countPVEOI) Complete()     { p.complete++ }
func (p *countPVEOI) Offer()        { p.offer++ }
func (p *countPVEOI) Retract()      { p.retract++ }
func (p *countPVEOI) Reset()        { p.reset++ }
func (p *countPVEOI) Pending() bool { return false }
func (p *countPVEOI) MSR() uint64   { return p.msr }
func (p *countPVEOI) Restore(msr uint64) error {
	p.msr = msr
	return nil
}

// guestRAM is 2 MiB of guest memory and its first page's bytes.
func guestRAM(t testing.TB) (*memory.Memory, []byte) {
	m, err := memory.New(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	b, err := m.Slice(0, 0x2000)
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

const pvWord = 0x1000 // guest-physical address of the PV EOI word

// withPVEOI gives vCPU 0 real PV EOI (package pveoi) on guest RAM and a
// port (0x92) through which the guest sends itself a vector.
func (r *rig) withPVEOI() []byte {
	m, ram := guestRAM(r.t)
	u := pveoi.New(true, m, []pveoi.LAPIC{r.apics.LAPIC(0)}, []*atomic.Uint64{&r.acct.CPUs[0].PVEOIs})
	if err := u.Register(&r.bus); err != nil {
		r.t.Fatal(err)
	}
	r.pveoi[0] = u.CPU(0)
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x92, Len: 1, Name: "self IPI", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error { r.deliver(a.CPU, a.Data[0]); return nil })})
	return ram
}

// pvEOIGuest is withPVEOI with a port (0x93) through which the guest does
// a real EOI, and two guest actions: look records the guest's PV EOI bit
// (in bits, in order), eoi looks and then clears it (the guest's EOI).
func (r *rig) pvEOIGuest() (bits *[]byte, look, eoi func(*fakeCPU)) {
	ram := r.withPVEOI()
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x93, Len: 1, Name: "EOI", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error { r.apics.LAPIC(a.CPU).EOI(); return nil })})
	bits = new([]byte)
	look = func(f *fakeCPU) { *bits = append(*bits, ram[pvWord]&1) }
	eoi = func(f *fakeCPU) { look(f); ram[pvWord] &^= 1 }
	return bits, look, eoi
}

// PV EOI: the vector injected alone is offered (the guest's bit set); the
// guest's EOI clears the bit and the loop completes it at the next entry.
// A vector nested above one still offered takes the offer back (the first
// then needs a real EOI), and is offered only if nothing else waits.
func TestPVEOI(t *testing.T) {
	r := newRig(t, 1)
	bits, look, eoi := r.pvEOIGuest()
	f := newFake(
		msrExit(true, pveoi.MSR, pvWord|1), // entry 0: PV EOI on
		outb(0x92, 0x40).with(look),        // entry 1: nothing; self IPI 0x40
		outb(0x80, 0).with(eoi),            // entry 2: 0x40 offered; the guest EOIs it
		outb(0x92, 0x50).with(look),        // entry 3: completed; self IPI 0x50
		outsb(0x92, 0x70, 0x60).with(look), // entry 4: 0x50 offered; 0x70 and 0x60 arrive
		outb(0x93, 0).with(look),           // entry 5: 0x50's offer taken back, 0x70 not offered (0x60 waits); a real EOI
		outb(0x80, 0).with(eoi),            // entry 6: 0x60 offered; the guest EOIs it
		outb(0x92, 0x45).with(look),        // entry 7: completed; 0x45 arrives below 0x50, which needs a real EOI
	)
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, 0x40), e(false, -1), e(false, 0x50), e(false, 0x70), e(false, 0x60),
		e(false, -1), e(false, -1))
	wantInjected(t, f, 0x40, 0x50, 0x70, 0x60)
	if want := []byte{0, 1, 0, 1, 0, 1, 0}; string(*bits) != string(want) {
		t.Errorf("the guest saw its PV EOI bit %v, want %v", *bits, want)
	}
	if n := r.acct.CPUs[0].PVEOIs.Load(); n != 2 {
		t.Errorf("%d PV EOIs, want 2 (0x40, 0x60)", n)
	}
	s := r.apics.LAPIC(0).Snapshot()
	if s.ISR != [8]uint32{0x50 / 32: 1 << (0x50 % 32)} || s.IRR != [8]uint32{0x45 / 32: 1 << (0x45 % 32)} {
		t.Errorf("ISR %#x IRR %#x, want 0x50 in service and 0x45 requested", s.ISR, s.IRR)
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.MSRPVEOIWrite: 1, exitcause.Other: 5, exitcause.PIOOther: 2})
	r.counters(0, 4, 0, 0)
}

// A vector requested while another is in service with its PV EOI offer
// standing (held back by PPR: the same priority class, below) takes the
// offer back at the next entry, as KVM does at every entry with IRR not
// empty: the guest's EOI then exits and the vector it unblocks is injected.
// Left standing, the exitless EOI would leave that vector waiting with
// nothing to make the CPU exit (TestStorm avic/pv+pveoi/4, CI 2026-12-04).
func TestPVEOIWithdrawnOverRequested(t *testing.T) {
	r := newRig(t, 1)
	bits, look, eoi := r.pvEOIGuest()
	f := newFake(
		msrExit(true, pveoi.MSR, pvWord|1), // entry 0: PV EOI on
		outb(0x92, 0x48).with(look),        // entry 1: nothing; self IPI 0x48
		outb(0x92, 0x41).with(look),        // entry 2: 0x48 offered; 0x41 arrives, held back by it
		outb(0x93, 0).with(look),           // entry 3: the offer taken back; a real EOI
		outb(0x80, 0).with(eoi),            // entry 4: 0x41 offered; the guest EOIs it
		outb(0x80, 0).with(look),           // entry 5: completed
	)
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, 0x48), e(false, -1), e(false, 0x41), e(false, -1), e(false, -1))
	wantInjected(t, f, 0x48, 0x41)
	if want := []byte{0, 1, 0, 1, 0}; string(*bits) != string(want) {
		t.Errorf("the guest saw its PV EOI bit %v, want %v", *bits, want)
	}
	if n := r.acct.CPUs[0].PVEOIs.Load(); n != 1 {
		t.Errorf("%d PV EOIs, want 1 (0x41)", n)
	}
	if s := r.apics.LAPIC(0).Snapshot(); s.ISR != [8]uint32{} || s.IRR != [8]uint32{} {
		t.Errorf("ISR %#x IRR %#x, want both empty", s.ISR, s.IRR)
	}
}

// An MSR access answered with #GP (an MSR nobody claims) queues an
// exception for the next entry: no vector is injected with it (KVM would
// drop it), an interrupt window is asked for instead.
func TestGPThenInject(t *testing.T) {
	r := newRig(t, 1)
	r.deliver(0, 0x40)
	f := newFake(
		msrExit(true, 0x4321, 7),  // entry 0: not ready (no exit yet): a window
		msrExit(false, 0x1234, 0), // entry 1: #GP queued: a window again
		open(kvm.ExitIRQWindowOpen),
		outb(0x80, 0),
	)
	r.fakes[0] = f
	r.runOne()
	gp := func(window bool, inject int) entry { return entry{window: window, inject: inject, exception: 13} }
	wantEntries(t, f, e(true, -1), gp(true, -1), gp(true, -1), e(false, 0x40), e(false, -1))
	wantInjected(t, f, 0x40)
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.MSROtherWrite: 1, exitcause.MSROtherRead: 1,
		exitcause.IRQWindow: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 0)
}

// A kick that ends KVM_RUN before the guest ran (immediate_exit) leaves
// the #GP of the MSR exit before it pending in KVM (KVM completed that exit
// first), and KVM then reports ready_for_interrupt_injection, which
// ignores pending exceptions (kvm_event_needs_reinjection): a vector
// injected now would sit beside the #GP and be dropped at the next exit,
// as in TestGPThenInject. The loop keeps asking for a window until an entry
// really ran. TestNoInterruptLostToMSRFault lost an IPI so under load
// (kvm_pvm, 2026-12-04): the IPI's kick came between the loop's last look
// and KVM_RUN.
func TestGPThenKick(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(
		msrExit(false, 0x1234, 0), // entry 0: #GP queued for the next entry
		open(kvm.ExitIRQWindowOpen),
		outb(0x80, 0),
	)
	runs := 0
	f.onRun = func() {
		if runs++; runs == 2 { // the IPI comes after the loop's last look
			r.deliver(0, 0x40)
		}
	}
	r.fakes[0] = f
	r.runOne()
	gp := func(window bool, inject int, immediate bool) entry {
		return entry{window: window, inject: inject, exception: 13, immediate: immediate}
	}
	wantEntries(t, f, e(false, -1), gp(false, -1, true), gp(true, -1, false), e(false, 0x40), e(false, -1))
	wantInjected(t, f, 0x40)
}

// The SYSCALL doorbell (package pvsyscall) takes back an interrupt KVM
// still holds when a SYSCALL traps to it from user mode: the vector goes
// back to IRR and its PV EOI offer is retracted; SYSCALL masked IF, so the
// loop asks for a window and injects it again when the kernel enables
// interrupts.
func TestDoorbellWithdraw(t *testing.T) {
	const (
		lstar = 0xFFFFFFFF81000000
		fmask = 0x47700
		star  = 0x0023001000000000
		entry = 0xFFFFFFFF81001000
		user  = 0x401000
	)
	r := newRig(t, 1)
	ram := r.withPVEOI()
	u := pvsyscall.New(true, 1)
	if err := u.Register(&r.bus); err != nil {
		t.Fatal(err)
	}
	var bits []byte
	look := func(f *fakeCPU) { bits = append(bits, ram[pvWord]&1) }
	// The guest in user mode, IF=1, runs SYSCALL: the host's emulator
	// leaves it at the trampoline's store, still at CPL3, IF masked; the
	// store to the doorbell page exits. KVM has not delivered 0x40.
	syscall := mmioWrite(pvsyscall.DoorbellGPA, 1)
	syscall.hold = true
	syscall.guest = func(f *fakeCPU) {
		look(f)
		f.sregs.CS = kvm.Segment{Selector: 0x33, DPL: 3, L: 1, Present: 1, S: 1, Type: 0xB}
		f.regs = kvm.Regs{RIP: lstar + pvsyscall.TrampolineStoreLen, RCX: user, R11: 0x202, RFLAGS: 0x2}
	}
	var after kvm.Regs
	var afterCS uint16
	f := newFake(
		msrExit(true, pveoi.MSR, pvWord|1),
		msrExit(true, pvsyscall.MSRSyscallEntry, entry),
		outb(0x92, 0x40),
		syscall,
		exitAt(kvm.ExitIRQWindowOpen, true, true).with(func(f *fakeCPU) {
			look(f)
			after, afterCS = f.regs, f.sregs.CS.Selector
			f.regs.RFLAGS |= rflagsIF // the kernel enabled interrupts
		}),
		outb(0x80, 0).with(look),
	)
	f.msrs[pvsyscall.MSRLSTAR], f.msrs[pvsyscall.MSRFMASK], f.msrs[pvsyscall.MSRSTAR] = lstar, fmask, star
	r.fakes[0] = f
	r.runOne()
	// Entry 4 has the registers the doorbell completed (IF=0): a window,
	// nothing queued (withdrawn); entry 5 injects 0x40 again.
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, -1), e(false, 0x40), e(true, -1), e(false, 0x40), e(false, -1))
	wantInjected(t, f, 0x40, 0x40)
	if after.RIP != entry || after.RFLAGS&rflagsIF != 0 || afterCS != 0x10 {
		t.Errorf("after the doorbell RIP %#x RFLAGS %#x CS %#x, want the kernel's entry %#x with IF=0 at CS 0x10",
			after.RIP, after.RFLAGS, afterCS, uint64(entry))
	}
	// Offered at the first injection, retracted at the withdrawal, offered
	// again.
	if want := []byte{1, 0, 1}; string(bits) != string(want) {
		t.Errorf("the guest saw its PV EOI bit %v, want %v", bits, want)
	}
	c := &r.acct.CPUs[0]
	if c.Withdrawn.Load() != 1 || c.InjectedVec[0x40].Load() != 1 || c.PVEOIs.Load() != 0 {
		t.Errorf("withdrawn %d, 0x40 injected %d, PV EOIs %d; want 1, 1, 0", c.Withdrawn.Load(), c.InjectedVec[0x40].Load(), c.PVEOIs.Load())
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.MSRPVEOIWrite: 1, exitcause.MSRSyscallEntryWrite: 1,
		exitcause.Other: 1, exitcause.SyscallDoorbell: 1, exitcause.IRQWindow: 1, exitcause.PIOOther: 1})
	r.counters(0, 1, 0, 0)
}

// The exits that make up an IPI's and a device's cost read only the
// general registers, which KVM stores in kvm_run at every exit: the loop
// asks KVM for no segment state (on VMX a dozen VMCS reads per exit) and
// calls no KVM_GET_SREGS for port, MMIO, MSR, HLT or window exits.
func TestExitsReadOnlyGeneralRegisters(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(outb(0x80, 1), mmioWrite(0xFEB00000-0x1000, 4), msrExit(true, 0x808, 0),
		msrExit(false, 0x4D564FFF, 0), open(kvm.ExitIRQWindowOpen), outb(0x80, 2))
	r.fakes[0] = f
	r.runOne()
	// Setting the boot state (EntryState.apply) reads them once.
	f.sregsGets--
	if f.run.ValidRegs != kvm.SyncRegsGPR {
		t.Errorf("kvm_run.kvm_valid_regs = %#x, want the general registers only (%#x)", f.run.ValidRegs, kvm.SyncRegsGPR)
	}
	if f.sregsGets != 0 {
		t.Errorf("%d KVM_GET_SREGS for exits that need no segment state", f.sregsGets)
	}
}

// INIT reaching a vCPU between an exit and the next entry: KVM would
// complete that exit (here: #GP for an MSR govmm refused) at the next
// KVM_RUN, on the real-mode state SIPI sets up. The loop completes it
// first (KVM_RUN with immediate_exit) and drops what that queued, so the
// start-up entry carries no exception. Found by the in-guest fuzzer
// (guest/baremetal/fuzz.c, seed 1): an AP's trampoline died on its far
// jump with a #GP pending.
func TestInitCompletesLastExit(t *testing.T) {
	r := newRig(t, 2)
	r.fakes[0] = newFake()
	inited := make(chan struct{}, 1)
	init := func(f *fakeCPU) {
		f.nmiMasked = true // INIT comes while the guest is in an NMI handler
		r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 1, Source: -1})
		inited <- struct{}{}
	}
	var cs []uint16
	var masked []bool
	rec := func(f *fakeCPU) { cs = append(cs, f.sregs.CS.Selector); masked = append(masked, f.nmiMasked) }
	f := newFake(open(kvm.ExitHLT).with(rec), msrExit(true, 0x4D564FFF, 1).with(init), outb(0x80, 0).with(rec))
	r.fakes[1] = f
	wait := r.start()
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 1, Source: -1})
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x20, Dest: 1, Source: -1})
	r.waitState(1, StateHalted)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.NMI, Dest: 1, Source: -1}) // wakes the HLT
	<-inited
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x30, Dest: 1, Source: -1})
	wait()
	if len(cs) != 2 || cs[0] != 0x2000 || cs[1] != 0x3000 {
		t.Fatalf("CS in the guest %#x, want 0x2000 then 0x3000", cs)
	}
	if masked[1] {
		t.Error("NMIs still blocked after INIT and SIPI: INIT unblocks them (KVM: vmx_vcpu_reset clears GUEST_INTERRUPTIBILITY_INFO)")
	}
	var imm []entry
	for _, en := range f.entries {
		if en.immediate {
			imm = append(imm, en)
		}
	}
	if len(imm) == 0 || imm[len(imm)-1].exception != 13 {
		t.Errorf("entries %+v: want an immediate_exit KVM_RUN that completes the refused WRMSR (#GP)", f.entries)
	}
	if last := f.entries[len(f.entries)-1]; last.exception != -1 || last.immediate {
		t.Errorf("start-up entry %+v: want no exception queued", last)
	}
}

// An entry after a device exit, with nothing standing in the LAPIC, skips
// the look (quietEntry); a vector a device handler delivers to this very
// vCPU during such an exit still goes in at the entry right after it (its
// Notify marks the vCPU notified), as does one an IPI brings while the
// guest runs (the kick).
func TestQuietEntrySeesEveryDelivery(t *testing.T) {
	r := newRig(t, 1)
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 1, Name: "raise", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			r.deliver(0, 0x50)
			return nil
		})})
	inGuest := step{waitKick: true, ready: true, ifFlag: true}
	f := newFake(outb(0x80, 0), outb(0x80, 0), outb(0x90, 0), outb(0x80, 0), outb(0x80, 0), inGuest, outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	<-f.inGuest
	r.deliver(0, 0x61) // above 0x50, which the guest never EOIs here
	wait()
	// 0x50 at the entry after port 0x90's exit; 0x61 after the kick.
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, -1), e(false, 0x50), e(false, -1), e(false, -1), e(false, 0x61), e(false, -1))
	wantInjected(t, f, 0x50, 0x61)
}

// TestQuietTPRWrite: an x2APIC TPR write with nothing requested takes no
// look at its entry, and that entry still loads the new TPR class into
// kvm_run's CR8 and keeps the TPR's low nibble; with a vector requested
// (held back by the TPR), the write that lowers the TPR is followed by a
// look that injects it; a TPR write the LAPIC refuses (#GP: reserved
// bits) changes neither.
func TestQuietTPRWrite(t *testing.T) {
	r := newRig(t, 1)
	lapic := x2apicMode(t, r)
	var tprSeen []uint64
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 2, Name: "probe", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			if a.Off == 0 {
				r.deliver(0, 0x25) // class 2: held back by a TPR of 0x2F
				return nil
			}
			tpr, err := lapic.ReadMSR(vlapic.MSRX2APICFirst + uint32(vlapic.RegTPR))
			tprSeen = append(tprSeen, tpr)
			return err
		})})
	tpr := func(v uint64) step { return msrExit(true, vlapic.MSRX2APICFirst+uint32(vlapic.RegTPR), v) }
	f := newFake(tpr(0x2F), outb(0x91, 0), tpr(0x100), outb(0x91, 0), outb(0x90, 0), tpr(0x10), outb(0x91, 0), outb(0x80, 0))
	var cr8 []uint64
	f.onRun = func() { cr8 = append(cr8, f.run.CR8) }
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(false, -1), e(false, -1), entry{inject: -1, exception: 13}, e(false, -1), e(false, -1), e(false, 0x25), e(false, -1), e(false, -1))
	wantInjected(t, f, 0x25)
	if want := []uint64{0, 2, 2, 2, 2, 2, 1, 1, 1}; !slices.Equal(cr8, want) {
		t.Errorf("kvm_run's CR8 at each entry %v, want %v", cr8, want)
	}
	if want := []uint64{0x2F, 0x2F, 0x10}; !slices.Equal(tprSeen, want) {
		t.Errorf("TPR read back %#x, want %#x (the quiet entries keep its low nibble)", tprSeen, want)
	}
}

// TestSettledEOI: an EOI that leaves a vector requested (held back by the
// one in service) is followed by a look that injects it; one that leaves
// the LAPIC settled needs none, and a delivery after it (here by the next
// exit's handler, to the vCPU itself) still reaches the entry after.
func TestSettledEOI(t *testing.T) {
	t.Run("x2apic", func(t *testing.T) {
		testSettledEOI(t, true, msrExit(true, vlapic.MSRX2APICFirst+uint32(vlapic.RegEOI), 0))
	})
	// The xAPIC page's EOI write (vcpu's xapicPage) is settled as the
	// x2APIC MSR's is.
	t.Run("xapic", func(t *testing.T) { testSettledEOI(t, false, mmioWrite(0xFEE00000+0xB0, 4)) })
}

func testSettledEOI(t *testing.T, x2 bool, eoi step) {
	r := newRig(t, 1)
	if x2 {
		x2apicMode(t, r)
	}
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 3, Name: "raise", Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			switch a.Off {
			case 0:
				r.deliver(0, 0x40)
				r.deliver(0, 0x30) // class 3: held back until 0x40's EOI
			case 2:
				r.deliver(0, 0x50)
			}
			return nil
		})})
	f := newFake(outb(0x90, 0), eoi, eoi, outb(0x91, 0), outb(0x92, 0), eoi, outb(0x80, 0))
	r.fakes[0] = f
	r.runOne()
	wantEntries(t, f, e(false, -1), e(false, 0x40), e(false, 0x30), e(false, -1), e(false, -1), e(false, 0x50), e(false, -1), e(false, -1))
	wantInjected(t, f, 0x40, 0x30, 0x50)
	if n := r.exits(0, exitcause.APIC(x2, true, uint16(vlapic.RegEOI))); n != 3 {
		t.Errorf("%d EOI exits counted, want 3", n)
	}
}

// TestExitWindows: a bus exit's handler runs inside the window its count
// opened (exitcause.Tally), so that a section's end reads the exit and
// what the handler counted together; no window is open when the vCPU
// enters the guest or halts, nor once its loop has ended on a handler's
// error.
func TestExitWindows(t *testing.T) {
	r := newRig(t, 1)
	tally := &r.acct.CPUs[0].Exits
	var inHandler []exitcause.Cause
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x90, Len: 1, Name: "probe", Cause: exitbus.Fixed(exitcause.PIOSerial),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			c, open := tally.Serving()
			if !open {
				t.Error("a handler ran with no window open")
			}
			inHandler = append(inHandler, c)
			if a.Data[0] == 0xEE {
				return errors.New("the handler fails")
			}
			return nil
		})})
	f := newFake(outb(0x90, 1), msrExit(true, 0x808, 0x20), open(kvm.ExitHLT), outb(0x90, 0xEE))
	f.onRun = func() {
		if c, open := tally.Serving(); open {
			t.Errorf("KVM_RUN entered with the window of a %v exit open", c)
		}
	}
	r.fakes[0] = f
	r.build()
	go func() { r.waitState(0, StateHalted); r.deliver(0, 0x40) }()
	if err := r.cpus[0].Run(); err == nil || !strings.Contains(err.Error(), "the handler fails") {
		t.Fatalf("loop ended with %v, want the handler's error", err)
	}
	if c, open := tally.Serving(); open {
		t.Errorf("the loop ended with the window of a %v exit open", c)
	}
	if len(inHandler) != 2 || inHandler[0] != exitcause.PIOSerial || inHandler[1] != exitcause.PIOSerial {
		t.Errorf("handlers ran in windows %v, want two PIOSerial", inHandler)
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.PIOSerial: 2, exitcause.APIC(true, true, 0x08): 1, exitcause.HLT: 1})
}

// TestPVEOIEnabledLate: injections before the guest enables PV EOI are
// offered nothing (and the loop stops asking package pveoi at each one);
// once it writes the MSR, the next injection is offered again.
func TestPVEOIEnabledLate(t *testing.T) {
	r := newRig(t, 1)
	bits, look, eoi := r.pvEOIGuest()
	f := newFake(
		outb(0x92, 0x40),                   // entry 0: nothing; self IPI 0x40
		outb(0x93, 0).with(look),           // entry 1: 0x40 injected, PV EOI off: no offer; a real EOI
		outb(0x92, 0x41),                   // entry 2: self IPI 0x41
		outb(0x93, 0).with(look),           // entry 3: 0x41 injected, still no offer; a real EOI
		msrExit(true, pveoi.MSR, pvWord|1), // entry 4: PV EOI on
		outb(0x92, 0x42).with(look),        // entry 5: nothing; self IPI 0x42
		outb(0x80, 0).with(eoi),            // entry 6: 0x42 offered; the guest EOIs it
		outb(0x80, 0).with(look),           // entry 7: completed
	)
	r.fakes[0] = f
	r.runOne()
	wantInjected(t, f, 0x40, 0x41, 0x42)
	if want := []byte{0, 0, 0, 1, 0}; string(*bits) != string(want) {
		t.Errorf("the guest saw its PV EOI bit %v, want %v", *bits, want)
	}
	if n := r.acct.CPUs[0].PVEOIs.Load(); n != 1 {
		t.Errorf("%d PV EOIs, want 1 (0x42)", n)
	}
	if s := r.apics.LAPIC(0).Snapshot(); s.ISR != [8]uint32{} || s.IRR != [8]uint32{} {
		t.Errorf("ISR %#x IRR %#x, want nothing in service or requested", s.ISR, s.IRR)
	}
}

// endedWithoutExit takes KVM_RUN's bare errno (its fast path) and a
// wrapped one alike, and nothing else.
func TestEndedWithoutExit(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{unix.EINTR, true}, {unix.EAGAIN, true},
		{&wrappedErr{unix.EINTR}, true}, {&wrappedErr{unix.EAGAIN}, true},
		{unix.EFAULT, false}, {&wrappedErr{unix.ENOMEM}, false}, {errors.New("EINTR"), false},
	} {
		if got := endedWithoutExit(c.err); got != c.want {
			t.Errorf("endedWithoutExit(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type wrappedErr struct{ err error }

func (w *wrappedErr) Error() string { return "wrapped: " + w.err.Error() }
func (w *wrappedErr) Unwrap() error { return w.err }
