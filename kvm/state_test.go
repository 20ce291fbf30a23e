package kvm

import (
	"os"
	"testing"
)

// testVCPUs makes a VM with n vCPUs on /dev/kvm (skipping without one),
// closed when the test ends.
func testVCPUs(t *testing.T, n int) (*System, []*VCPU) {
	t.Helper()
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		t.Skipf("SKIP: no usable /dev/kvm (%v): this test needs KVM", err)
	} else {
		f.Close()
	}
	sys, err := Open("/dev/kvm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	vm, err := sys.CreateVM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vm.Close() })
	cs := make([]*VCPU, n)
	for i := range cs {
		if cs[i], err = vm.CreateVCPU(i); err != nil {
			t.Fatal(err)
		}
		c := cs[i]
		t.Cleanup(func() { c.Close() })
	}
	return sys, cs
}

// TestStateRoundTrip: a vCPU's state saved whole and restored into
// another vCPU reads back the same there: registers, segments, control
// registers, the MSRs a kernel relies on, debug registers and events.
func TestStateRoundTrip(t *testing.T) {
	sys, cs := testVCPUs(t, 2)
	a, b := cs[0], cs[1]
	s, err := a.Sregs()
	if err != nil {
		t.Fatal(err)
	}
	s.CS = Segment{Base: 0, Limit: 0xFFFFFFFF, Selector: 0x10, Type: 0xB, Present: 1, S: 1, L: 1, G: 1}
	s.CR0, s.CR4, s.EFER, s.CR3 = 0x80050033, 0x20, 0x500, 0x9000
	if err := a.SetSregs(s); err != nil {
		t.Fatal(err)
	}
	if err := a.SetRegs(Regs{RIP: 0xffffffff81000000, RFLAGS: 0x202, RAX: 0x1234, R15: 0xfeed}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []MSRValue{{0xC0000082, 0xffffffff81a00000}, {0x175, 0x4000}, {0x277, 0x0007040600070406}} {
		if err := a.SetMSR(m.Index, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SetDebugRegs(DebugRegs{DB: [4]uint64{0x1000}, DR6: 0xFFFF0FF0, DR7: 0x401}); err != nil {
		t.Fatal(err)
	}
	saved, err := a.SaveState(SnapshotMSRs, sys.CheckExtension(CapXSAVE2))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.RestoreState(saved); err != nil {
		t.Fatal(err)
	}
	got, err := b.SaveState(SnapshotMSRs, sys.CheckExtension(CapXSAVE2))
	if err != nil {
		t.Fatal(err)
	}
	if got.Regs != saved.Regs {
		t.Errorf("registers %+v, want %+v", got.Regs, saved.Regs)
	}
	if got.Sregs.CS != saved.Sregs.CS || got.Sregs.CR0 != saved.Sregs.CR0 || got.Sregs.CR3 != saved.Sregs.CR3 || got.Sregs.EFER != saved.Sregs.EFER {
		t.Errorf("sregs CS %+v CR0 %#x CR3 %#x EFER %#x, want %+v %#x %#x %#x", got.Sregs.CS, got.Sregs.CR0, got.Sregs.CR3, got.Sregs.EFER,
			saved.Sregs.CS, saved.Sregs.CR0, saved.Sregs.CR3, saved.Sregs.EFER)
	}
	want := map[uint32]uint64{}
	for _, m := range saved.MSRs {
		want[m.Index] = m.Data
	}
	for _, m := range got.MSRs {
		if m.Index == 0x10 {
			continue // the TSC runs on
		}
		if want[m.Index] != m.Data {
			t.Errorf("MSR %#x = %#x, want %#x", m.Index, m.Data, want[m.Index])
		}
	}
	if len(got.MSRs) != len(saved.MSRs) || want[0xC0000082] != 0xffffffff81a00000 {
		t.Errorf("%d MSRs restored of %d; LSTAR saved as %#x", len(got.MSRs), len(saved.MSRs), want[0xC0000082])
	}
	if got.Debug.DB[0] != 0x1000 || got.Debug.DR7 != saved.Debug.DR7 || got.XCR0 != saved.XCR0 || got.MPState != saved.MPState {
		t.Errorf("debug %+v XCR0 %#x MP %d, want DR0 0x1000 DR7 %#x XCR0 %#x MP %d", got.Debug, got.XCR0, got.MPState, saved.Debug.DR7, saved.XCR0, saved.MPState)
	}
	t.Logf("%d MSRs, %d bytes of XSAVE", len(saved.MSRs), len(saved.XSAVE))
}
