package vcpu

import (
	"strings"
	"testing"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// TestHandover: a vCPU saved on govmm's LAPIC goes to KVM's and back with
// its loop state, latched events and LAPIC intact: halted with IF set is
// KVM's HALTED and back; a latched NMI and SMI become KVM's pending ones;
// an AP waiting for SIPI with one latched is KVM's SIPI_RECEIVED with the
// vector, and comes back waiting with it; a TSC deadline goes as the MSR
// and comes back as the time left, counted from the saved TSC.
func TestHandover(t *testing.T) {
	const tscHz = 2_000_000_000
	l := vlapic.Saved{Base: 0xFEE00000 | vlapic.BaseEN | vlapic.BaseEXTD, Mode: vlapic.ModeX2APIC, XID: 1, DFR: 0xFFFFFFFF, SVR: 0x1FF}
	l.IRR[2] = 1 << 1 // vector 0x41
	l.LVT[0] = 0xEC | 2<<17
	l.Timer = vlapic.SavedTimer{Armed: true, TSCDeadline: 5_000_000, RemainingNS: 1_500_000}
	l.Events.NMIs = 1
	s := Saved{Loop: LoopHalted, HaltIF: true, Events: vlapic.Events{SMI: true}, PVEOI: 0x2001}
	s.KVM.Regs.RFLAGS = 2 | 1<<9
	s.KVM.MSRs = []kvm.MSRValue{{Index: 0x10, Data: 2_000_000}}

	k, err := OnKVMLAPIC(s, l, 1)
	if err != nil {
		t.Fatal(err)
	}
	if k.KVM.MPState != kvm.MPStateHalted || k.KVM.Events.NMI.Pending != 1 || k.KVM.Events.SMI.Pending != 1 ||
		k.Events != (vlapic.Events{}) || k.Loop != LoopRunning || k.PVEOI != 0x2001 || k.KVM.Sregs.APICBase != l.Base {
		t.Errorf("on KVM's LAPIC: MP state %d, NMIs %d, SMI %d, loop %d %+v, PV EOI %#x, APIC base %#x",
			k.KVM.MPState, k.KVM.Events.NMI.Pending, k.KVM.Events.SMI.Pending, k.Loop, k.Events, k.PVEOI, k.KVM.Sregs.APICBase)
	}
	if k.KVMLAPIC == nil || k.KVMLAPIC.TSCDeadline != 5_000_000 || len(k.KVMLAPIC.Page) != vlapic.KVMPageSize {
		t.Fatalf("KVM's LAPIC: %+v", k.KVMLAPIC)
	}
	g, l2, err := OnGovmmLAPIC(k, tscHz)
	if err != nil {
		t.Fatal(err)
	}
	if g.Loop != LoopHalted || !g.HaltIF || g.KVM.MPState != kvm.MPStateRunnable || g.KVMLAPIC != nil {
		t.Errorf("back on govmm's: loop %d IF %v MP state %d", g.Loop, g.HaltIF, g.KVM.MPState)
	}
	want := l
	want.Events = vlapic.Events{}
	if l2 != want { // 3,000,000 TSC ticks at 2 GHz: 1.5 ms
		t.Errorf("govmm's LAPIC back:\n%+v\nwant\n%+v", l2, want)
	}

	ap := Saved{Loop: LoopWaitSIPI, Events: vlapic.Events{SIPI: true, SIPIVector: 0x9A}}
	apl := vlapic.Saved{Base: 0xFEE00000 | vlapic.BaseEN, Mode: vlapic.ModeXAPIC, XID: 2, DFR: 0xFFFFFFFF}
	k, err = OnKVMLAPIC(ap, apl, 2)
	if err != nil || k.KVM.MPState != kvm.MPStateSIPIReceived || k.KVM.Events.SIPIVector != 0x9A {
		t.Errorf("AP with a SIPI latched on KVM's: MP state %d vector %#x, %v", k.KVM.MPState, k.KVM.Events.SIPIVector, err)
	}
	if g, _, err := OnGovmmLAPIC(k, tscHz); err != nil || g.Loop != LoopWaitSIPI || !g.Events.SIPI || g.Events.SIPIVector != 0x9A {
		t.Errorf("AP back: loop %d %+v, %v", g.Loop, g.Events, err)
	}
	k.KVM.MPState = kvm.MPStateUninitialized
	if g, _, err := OnGovmmLAPIC(k, tscHz); err != nil || g.Loop != LoopWaitSIPI || g.Events.SIPI {
		t.Errorf("AP never started, back: loop %d %+v, %v", g.Loop, g.Events, err)
	}
}

// TestHandoverRefuses: what KVM's saved state has no place for (an INIT
// or ExtINT latched on a running vCPU, an INIT latched in SMM) is refused
// with a line naming it.
func TestHandoverRefuses(t *testing.T) {
	l := vlapic.Saved{Base: 0xFEE00000 | vlapic.BaseEN, Mode: vlapic.ModeXAPIC, DFR: 0xFFFFFFFF}
	for _, c := range []struct {
		s    Saved
		l    vlapic.Events
		want string
	}{
		{Saved{Events: vlapic.Events{INIT: true}}, vlapic.Events{}, "INIT"},
		{Saved{}, vlapic.Events{INIT: true}, "INIT"},
		{Saved{}, vlapic.Events{ExtINT: true}, "ExtINT"},
		{Saved{Loop: 9}, vlapic.Events{}, "loop state 9"},
	} {
		ll := l
		ll.Events = c.l
		if _, err := OnKVMLAPIC(c.s, ll, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v with %+v: %v, want an error naming %q", c.s, c.l, err, c.want)
		}
	}
	k, err := OnKVMLAPIC(Saved{}, l, 0)
	if err != nil {
		t.Fatal(err)
	}
	k.KVM.Events.SMI.LatchedInit = 1
	if _, _, err := OnGovmmLAPIC(k, 1e9); err == nil || !strings.Contains(err.Error(), "INIT") {
		t.Errorf("an INIT latched in SMM: %v", err)
	}
	k.KVM.Events.SMI.LatchedInit = 0
	k.KVM.MPState = 77
	if _, _, err := OnGovmmLAPIC(k, 1e9); err == nil || !strings.Contains(err.Error(), "77") {
		t.Errorf("MP state 77: %v", err)
	}
	if _, _, err := OnGovmmLAPIC(Saved{}, 1e9); err == nil {
		t.Errorf("no page: no error")
	}
}
