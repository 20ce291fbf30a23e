package vcpu

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// After INIT and SIPI the vCPU is as KVM's own INIT leaves it
// (kvm_vcpu_reset with init_event, arch/x86/kvm/x86.c): RDX is the
// processor signature, CR0.CD/NW survive while paging and protection go,
// the debug registers are at their reset values.
func TestStartAtIsKVMsINIT(t *testing.T) {
	for _, c := range []struct {
		name         string
		cr0, wantCR0 uint64
		sig          uint32
	}{
		{"Linux's CR0 (caches on)", 0x80050033, 0x10, 0x806F8},
		{"caches off before INIT", 0xE0000011, 0x60000010, 0xA20F12},
	} {
		f := newFake()
		f.sregs.CR0, f.sregs.CR4, f.sregs.EFER, f.sregs.CR3 = c.cr0, 0x20, 0x500, 0x1000
		f.regs = kvm.Regs{RAX: 1, RDX: 2, RSP: 3, RIP: 0xffffffff81000000}
		if err := startAt(f, 0x08, c.sig); err != nil {
			t.Fatal(err)
		}
		if f.sregs.CR0 != c.wantCR0 || f.sregs.CR4 != 0 || f.sregs.EFER != 0 || f.sregs.CR3 != 0 {
			t.Errorf("%s: CR0 %#x CR4 %#x EFER %#x CR3 %#x, want CR0 %#x and the rest 0",
				c.name, f.sregs.CR0, f.sregs.CR4, f.sregs.EFER, f.sregs.CR3, c.wantCR0)
		}
		if want := (kvm.Regs{RDX: uint64(c.sig), RFLAGS: 2}); f.regs != want {
			t.Errorf("%s: registers %+v, want %+v", c.name, f.regs, want)
		}
		if f.sregs.CS.Selector != 0x0800 || f.sregs.CS.Base != 0x8000 {
			t.Errorf("%s: CS %#x base %#x, want 0x800 base 0x8000", c.name, f.sregs.CS.Selector, f.sregs.CS.Base)
		}
		if d := f.debugRegs; d == nil || *d != (kvm.DebugRegs{DR6: 0xFFFF0FF0, DR7: 0x400}) {
			t.Errorf("%s: debug registers %+v, want DR6 0xffff0ff0 and DR7 0x400, the rest 0", c.name, d)
		}
	}
}

// INIT turns off the KVM PV features that write guest memory, where the
// guest had turned them on; it leaves alone what KVM does not serve here.
func TestINITDisablesKVMPV(t *testing.T) {
	f := newFake()
	f.msrs[0x4B564D01] = 0x7000 | 1 // kvmclock on
	f.msrs[0x12] = 0                // the old kvmclock MSR, off
	if err := disableKVMPV(f); err != nil {
		t.Fatal(err)
	}
	if f.msrs[0x4B564D01] != 0 {
		t.Errorf("MSR_KVM_SYSTEM_TIME_NEW %#x after INIT, want 0", f.msrs[0x4B564D01])
	}
	for _, m := range []uint32{0x4B564D02, 0x4B564D03, 0x4B564D06} {
		if _, ok := f.msrs[m]; ok {
			t.Errorf("MSR %#x written, though the guest never turned it on", m)
		}
	}
}

// The INIT path itself runs it: a CPU INITed with kvmclock on comes back
// with it off.
func TestINITPathDisablesKVMPV(t *testing.T) {
	r := newRig(t, 2)
	r.fakes[0] = newFake()
	inited := make(chan struct{}, 1)
	after := uint64(1)
	r.fakes[1] = newFake(
		outb(0x80, 0).with(func(f *fakeCPU) {
			f.msrs[0x4B564D01] = 0x7000 | 1 // the guest turns kvmclock on
			r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 1, Source: -1})
			inited <- struct{}{}
		}),
		outb(0x80, 0).with(func(f *fakeCPU) { after = f.msrs[0x4B564D01] }))
	wait := r.start()
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x20, Dest: 1, Source: -1})
	<-inited
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: 0x30, Dest: 1, Source: -1})
	wait()
	if after != 0 {
		t.Errorf("MSR_KVM_SYSTEM_TIME_NEW %#x after INIT and SIPI, want 0", after)
	}
}

// A start-up state KVM refuses ends the vCPU with an error that says so,
// not quietly as if the VM had ended.
func TestRefusedStartIsAnError(t *testing.T) {
	r := newRig(t, 2)
	r.fakes[0] = newFake()
	f := newFake(outb(0x80, 0))
	f.refuseDebugRegs = true
	r.fakes[1] = f
	err := runAPStartedAt(r, 0x20)
	if err == nil || !strings.Contains(err.Error(), "starting at SIPI vector 0x20") {
		t.Errorf("vCPU ended with %v, want the refused start-up state named", err)
	}
}

// INIT to the BSP is a reset, as under KVM: the BSP does not wait for a
// SIPI (which would be ignored) but restarts at the reset vector, where
// govmm has no firmware, so the VM ends with an architectural end
// (ErrShutdown) that says so. (An AP's INIT and SIPI: TestInitSIPI.)
func TestBSPINITEndsTheVM(t *testing.T) {
	r := newRig(t, 1)
	r.fakes[0] = newFake(outb(0x80, 0).with(func(*fakeCPU) {
		r.apics.Deliver(vlapic.Message{Delivery: vlapic.INIT, Dest: 0, Source: 3})
	}), outb(0x80, 0))
	r.build()
	errs := make(chan error, 1)
	go func() { errs <- r.cpus[0].Run() }()
	select {
	case err := <-errs:
		if !errors.Is(err, ErrShutdown) || !strings.Contains(err.Error(), "INIT to the BSP (vCPU 0, from vCPU 3's ICR)") {
			t.Errorf("vCPU 0 ended with %v, want a reset naming INIT to the BSP and its sender", err)
		}
	case <-time.After(10 * time.Second):
		close(r.done)
		t.Fatalf("vCPU 0 still running 10 s after INIT to the BSP (state %v): it waits for a SIPI", r.cpus[0].State())
	}
	if n := len(r.fakes[0].entries); n != 1 {
		t.Errorf("%d entries, want 1: the BSP must not enter the guest again after INIT", n)
	}
}

// A triple fault's error carries the vCPU's last events: on AMD, where
// KVM has reset the VMCB before it reports the shutdown, they are all
// there is to say where a CPU started (the SIPI's vector) and what it did
// since, i.e. whether a wrecked guest or govmm's start-up put it there.
// A CPU that faulted in its SIPI's page with no exit since also shows
// that page's first bytes (the fuzz's trampoline, intact or overwritten).
func TestTripleFaultNamesItsSIPI(t *testing.T) {
	r := newRig(t, 2)
	m, _ := guestRAM(t)
	page, err := m.Slice(0x20000, 32)
	if err != nil {
		t.Fatal(err)
	}
	copy(page, []byte{0xfa, 0x8c, 0xc8, 0x8e, 0xd8})
	r.mem = m
	r.fakes[0] = newFake()
	r.fakes[1] = newFake(step{reason: kvm.ExitShutdown})
	err = runAPStartedAt(r, 0x20)
	want := "its last events: SIPI 0x20@0x0, exit 8@0x0; the 32 bytes at its SIPI page 0x20000 now: fa 8c c8 8e d8 00"
	if !errors.Is(err, ErrShutdown) || !strings.Contains(err.Error(), want) {
		t.Errorf("vCPU 1 ended with %v, want a triple fault with %q", err, want)
	}
}

// runAPStartedAt builds the rig, runs vCPU 1 (an AP, waiting for a SIPI),
// starts it with a SIPI of vector vec and returns how its Run ended.
func runAPStartedAt(r *rig, vec uint8) error {
	r.build()
	errs := make(chan error, 1)
	go func() { errs <- r.cpus[1].Run() }()
	r.waitState(1, StateWaitSIPI)
	r.apics.Deliver(vlapic.Message{Delivery: vlapic.StartUp, Vector: vec, Dest: 1, Source: -1})
	return <-errs
}
