package vcpu

import (
	"errors"
	"testing"
	"time"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// parked waits for p to park.
func parked(t *testing.T, p *Parking) {
	t.Helper()
	select {
	case <-p.Parked():
	case <-time.After(10 * time.Second):
		t.Fatal("the vCPU did not park")
	}
	if p.Err != nil {
		t.Fatalf("parking: %v", p.Err)
	}
}

// TestParkRunning: a vCPU asked to park between exits completes the last
// exit first (one KVM_RUN with immediate_exit, which loads the registers
// the handler edited) and injects nothing, saves its state on its own
// thread, waits while parked, and goes on where it was once released.
func TestParkRunning(t *testing.T) {
	r := newRig(t, 1)
	reqs := make(chan *Parking, 1)
	s := outb(0x80, 1)
	s.guest = func(*fakeCPU) {
		req, err := r.cpus[0].Park()
		if err != nil {
			t.Error(err)
		}
		r.deliver(0, 0x41) // arrives before the park: stays in the LAPIC
		reqs <- req
	}
	f := newFake(s, outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	req := <-reqs
	parked(t, req)
	if got := r.cpus[0].State(); got != StateParked {
		t.Errorf("state while parked %v, want parked", got)
	}
	sv := req.Saved
	if sv.Loop != LoopRunning || f.saves != 1 || sv.KVM.Regs.RIP != f.regs.RIP {
		t.Errorf("saved %+v after %d saves, want running with the fake's registers", sv, f.saves)
	}
	if n := len(f.entries); n != 2 || !f.entries[1].immediate || f.entries[1].inject >= 0 {
		t.Errorf("entries before parking %+v: want the exit's entry, then one immediate exit that injects nothing", f.entries)
	}
	if p := r.apics.LAPIC(0).Save(); p.IRR[0x41/32]>>(0x41%32)&1 == 0 {
		t.Errorf("vector 0x41 is not in the parked vCPU's LAPIC: %+v", p.IRR)
	}
	req.Release()
	wait()
	if len(f.injected) != 1 || f.injected[0] != 0x41 {
		t.Errorf("after release injected %v, want 0x41", f.injected)
	}
}

// TestParkHalted: a halted vCPU parks in its HLT (saving that, and the
// HLT's IF), and after release waits on: a vector ends the HLT as before.
func TestParkHalted(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	req, err := r.cpus[0].Park()
	if err != nil {
		t.Fatal(err)
	}
	parked(t, req)
	if req.Saved.Loop != LoopHalted || !req.Saved.HaltIF {
		t.Errorf("saved loop %v IF %v, want halted with IF set", req.Saved.Loop, req.Saved.HaltIF)
	}
	req.Release()
	r.waitState(0, StateHalted)
	r.deliver(0, 0x45)
	wait()
	if len(f.injected) != 1 || f.injected[0] != 0x45 {
		t.Errorf("injected %v, want 0x45 after the HLT", f.injected)
	}
}

// TestParkAgainWhileParked: a request made while the vCPU is still parked
// from the last one (released, not yet gone on: Notify wakes nothing then)
// is served before the vCPU waits on in its HLT, where nothing else would
// wake it.
func TestParkAgainWhileParked(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	first, err := r.cpus[0].Park()
	if err != nil {
		t.Fatal(err)
	}
	parked(t, first)
	second, err := r.cpus[0].Park() // while parked: the swap took the first
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	parked(t, second)
	if second.Err != nil || second.Saved.Loop != LoopHalted {
		t.Errorf("second park: %v, loop %v", second.Err, second.Saved.Loop)
	}
	second.Release()
	r.waitState(0, StateHalted)
	r.deliver(0, 0x45)
	wait()
}

// TestParkEnded: a request to a vCPU whose loop has ended is answered at
// once with ErrNotParked, and a second request while one waits is refused.
func TestParkEnded(t *testing.T) {
	r := newRig(t, 1)
	r.fakes[0] = newFake(outb(0x80, 0))
	r.runOne()
	p, err := r.cpus[0].Park()
	if err != nil {
		t.Fatal(err)
	}
	<-p.Parked()
	if !errors.Is(p.Err, ErrNotParked) {
		t.Errorf("park of an ended vCPU: %v, want ErrNotParked", p.Err)
	}
	r2 := newRig(t, 1)
	r2.fakes[0] = newFake(outb(0x80, 0))
	r2.build()
	if _, err := r2.cpus[0].Park(); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.cpus[0].Park(); err == nil {
		t.Error("a second park request while one waits was accepted")
	}
}

// TestResume: a vCPU restored from a snapshot loads its saved state into
// KVM on its own thread (no boot state) and goes on where it was parked:
// halted, it waits for what ends the HLT; running, it enters at once with
// its saved latched events acted on.
func TestResume(t *testing.T) {
	t.Run("halted", func(t *testing.T) {
		r := newRig(t, 1)
		f := newFake(outb(0x80, 0))
		r.fakes[0] = f
		r.build()
		saved := &Saved{Loop: LoopHalted, HaltIF: true, KVM: kvm.VCPUState{Regs: kvm.Regs{RIP: 0x5000, RFLAGS: 0x202}}}
		r.cpus[0] = New(0, Config{KVM: f, LAPIC: r.apics.LAPIC(0), Counters: &r.acct.CPUs[0], Bus: &r.bus, Clock: r.clock,
			Done: r.done, Resume: saved, SMM: true})
		errc := make(chan error, 1)
		go func() { errc <- r.cpus[0].Run() }()
		r.waitState(0, StateHalted)
		if f.restores != 1 || f.regs.RIP != 0x5000 || len(f.entries) != 0 {
			t.Errorf("%d restores, RIP %#x, %d entries: want the saved state loaded and no entry while halted", f.restores, f.regs.RIP, len(f.entries))
		}
		r.deliver(0, 0x45)
		r.check(<-errc)
		if len(f.injected) != 1 || f.injected[0] != 0x45 {
			t.Errorf("injected %v, want 0x45", f.injected)
		}
	})
	t.Run("running", func(t *testing.T) {
		r := newRig(t, 1)
		f := newFake(open(kvm.ExitIRQWindowOpen), outb(0x80, 0))
		r.fakes[0] = f
		r.build()
		saved := &Saved{Loop: LoopRunning, Events: vlapic.Events{NMIs: 1}, KVM: kvm.VCPUState{Regs: kvm.Regs{RIP: 0x6000, RFLAGS: 0x202}}}
		r.cpus[0] = New(0, Config{KVM: f, LAPIC: r.apics.LAPIC(0), Counters: &r.acct.CPUs[0], Bus: &r.bus, Clock: r.clock,
			Done: r.done, Resume: saved, SMM: true})
		r.check(r.cpus[0].Run())
		if f.restores != 1 || f.nmis != 1 {
			t.Errorf("%d restores, %d NMIs: want the state loaded and the latched NMI injected", f.restores, f.nmis)
		}
	})
}
