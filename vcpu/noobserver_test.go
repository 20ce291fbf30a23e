package vcpu

import (
	"testing"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// TestNoObserver: the interrupt path needs no observer. With
// vlapic.NopObserver and no Counters, an IPI wakes the halted vCPU,
// another kicks it out of the guest, a SELF_IPI write on the exit bus
// reaches its LAPIC, and each is injected once and ended by an EOI write,
// as with accounting; and nothing is counted: no exit, wake-up or kick,
// no IPI, injection or latency.
func TestNoObserver(t *testing.T) {
	r := newRigWith(t, 1, vlapic.Options{X2APIC: true, Observer: vlapic.NopObserver{}})
	r.noCounters = true
	a := r.apics.LAPIC(0)
	if err := a.SetBase(a.Base() | vlapic.BaseEXTD); err != nil {
		t.Fatal(err)
	}
	r.enable(0)
	r.register(exitbus.Range{Space: exitbus.MSR, Base: vlapic.MSRX2APICFirst, Len: vlapic.MSRX2APICLast - vlapic.MSRX2APICFirst + 1,
		Name: "x2APIC", PerCPU: true, Cause: exitbus.Fixed(exitcause.Other),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) (err error) {
			if a.Write {
				_, err = r.apics.LAPIC(a.CPU).WriteMSR(uint32(a.Addr), a.Value)
			} else {
				a.Value, err = r.apics.LAPIC(a.CPU).ReadMSR(uint32(a.Addr))
			}
			return err
		})})
	eoi := msrExit(true, vlapic.MSRX2APICFirst+uint32(vlapic.RegEOI), 0)
	selfIPI := msrExit(true, vlapic.MSRX2APICFirst+uint32(vlapic.RegSelfIPI), 0x52)
	inGuest := step{waitKick: true, ready: true, ifFlag: true}
	f := newFake(open(kvm.ExitHLT), eoi, inGuest, eoi, selfIPI, eoi, outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	r.sendIPI(0, 0, 0x50)
	<-f.inGuest
	r.sendIPI(0, 0, 0x51)
	wait()
	wantInjected(t, f, 0x50, 0x51, 0x52)
	if s := a.Snapshot(); s.ISR != [8]uint32{} || s.IRR != [8]uint32{} {
		t.Errorf("ISR %#x IRR %#x, want both empty: every vector ended", s.ISR, s.IRR)
	}
	if f.n != len(f.script) { // the inGuest step ends only when kicked
		t.Errorf("ran %d of %d steps", f.n, len(f.script))
	}
	s := r.acct.CPUs[0].Snapshot()
	if s.Total() != 0 || s.Wakeups != 0 || s.KicksSent != 0 {
		t.Errorf("counted without Counters: %d exits, %d wake-ups, %d kicks", s.Total(), s.Wakeups, s.KicksSent)
	}
	if s.IPISent != [accounting.NumIPIKinds]uint64{} || s.IPIRecvExits != [accounting.NumIPIKinds]uint64{} || s.Injected != 0 {
		t.Errorf("counted without an observer: sent %v, receiver exits %v, injected %d", s.IPISent, s.IPIRecvExits, s.Injected)
	}
	if l := r.acct.Latency.Report(); len(l) != 0 {
		t.Errorf("latencies without an observer: %+v", l)
	}
}
