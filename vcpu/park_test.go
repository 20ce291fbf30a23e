package vcpu

import (
	"errors"
	"testing"
	"time"

	"github.com/govmm/govmm/kvm"
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
