package vcpu

import (
	"strings"
	"testing"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
)

// inKernelFake is the fake vCPU with KVM's LAPIC behind it: the vector of
// its IOAPIC EOI exits, and a LAPIC page to dump.
type inKernelFake struct {
	*fakeCPU
	eoiVector uint8
	page      kvm.LAPICState
}

func (f *inKernelFake) IOAPICEOIVector() uint8         { return f.eoiVector }
func (f *inKernelFake) LAPIC() (kvm.LAPICState, error) { return f.page, nil }
func (f *inKernelFake) SetLAPIC(p kvm.LAPICState) error {
	f.page = p
	return nil
}

// newInKernel builds one vCPU on KVM's LAPIC around the script: no govmm
// LAPIC, its exits counted into acct, its IOAPIC EOIs handed to eoi.
func newInKernel(t *testing.T, f *inKernelFake, bus *exitbus.Bus, acct *accounting.VM, done chan struct{}, eoi func(uint8)) *VCPU {
	t.Helper()
	return New(0, Config{KVM: f, InKernel: true, IOAPICEOI: eoi, Counters: &acct.CPUs[0], Bus: bus, Clock: wallClock{},
		Done: done, Boot: &EntryState{Regs: kvm.Regs{RIP: 0x1000, RFLAGS: 2}}})
}

// TestInKernelLoop: with KVM's LAPIC (--lapic=kvm) the loop injects
// nothing and asks for no interrupt window; it serves port I/O from the
// bus, hands each KVM_EXIT_IOAPIC_EOI's vector to the IOAPIC once,
// counted as such, and counts an exit for a kick that found nothing as
// spurious.
func TestInKernelLoop(t *testing.T) {
	var eois []uint8
	var wrote []byte
	var bus exitbus.Bus
	if err := bus.Register(exitbus.Range{Space: exitbus.PIO, Base: 0x3F8, Len: 1, Name: "serial", Cause: exitbus.Fixed(exitcause.PIOSerial),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error { wrote = append(wrote, a.Data...); return nil })}); err != nil {
		t.Fatal(err)
	}
	f := &inKernelFake{fakeCPU: newFake(
		outb(0x3F8, 'k'),
		open(kvm.ExitIOAPICEOI).with(func(f *fakeCPU) {}),
		open(kvm.ExitIntr),
		outb(0x3F8, '!'),
	), eoiVector: 0x61}
	acct := accounting.NewVM(1)
	v := newInKernel(t, f, &bus, acct, make(chan struct{}), func(vec uint8) { eois = append(eois, vec) })
	if err := v.Run(); err == nil || err.Error() != "vCPU 0: KVM_RUN: "+errScriptEnd.Error() {
		t.Fatalf("loop ended with %v, want the end of the script", err)
	}
	if string(wrote) != "k!" {
		t.Errorf("serial got %q, want \"k!\"", wrote)
	}
	if len(eois) != 1 || eois[0] != 0x61 {
		t.Errorf("IOAPIC EOIs %x, want [61]", eois)
	}
	for _, e := range f.entries {
		if e.window || e.inject >= 0 {
			t.Errorf("entry %+v: the loop injected or asked for a window with KVM's LAPIC", e)
		}
	}
	for c, want := range map[exitcause.Cause]uint64{exitcause.PIOSerial: 2, exitcause.IOAPICEOIExit: 1, exitcause.KickSpurious: 1, exitcause.Kick: 0} {
		if got := acct.CPUs[0].Exits.Load(c); got != want {
			t.Errorf("%s: %d exits, want %d", c, got, want)
		}
	}
}

// TestInKernelStop: a VM's end kicks a vCPU inside KVM_RUN (on KVM's
// LAPIC a halt stays inside it) and the loop returns, the kick counted as
// one that brought work.
func TestInKernelStop(t *testing.T) {
	f := &inKernelFake{fakeCPU: newFake(step{waitKick: true})}
	acct := accounting.NewVM(1)
	done := make(chan struct{})
	v := newInKernel(t, f, &exitbus.Bus{}, acct, done, nil)
	ret := make(chan error, 1)
	go func() { ret <- v.Run() }()
	<-f.inGuest
	close(done)
	v.Stop() // as vmm ends a VM
	if err := <-ret; err != nil {
		t.Fatalf("loop ended with %v, want nil at the VM's end", err)
	}
	if got := acct.CPUs[0].Exits.Load(exitcause.Kick); got != 1 {
		t.Errorf("%d kick exits, want 1", got)
	}
}

// TestInKernelDump: a dump of a vCPU on KVM's LAPIC reads KVM's LAPIC
// page on the vCPU's own thread and names it as KVM's.
func TestInKernelDump(t *testing.T) {
	f := &inKernelFake{fakeCPU: newFake(step{waitKick: true}, outb(0x80, 0))}
	f.page.Regs[0x23] = 5               // ID register: xAPIC ID 5 in bits 31:24
	f.page.Regs[0x200+0x10*2+1] = 1     // IRR: vector 0x48
	f.run.APICBase = 0xFEE00000 | 1<<11 // EN, xAPIC mode
	acct := accounting.NewVM(1)
	v := newInKernel(t, f, &exitbus.Bus{}, acct, make(chan struct{}), nil)
	ret := make(chan error, 1)
	go func() { ret <- v.Run() }()
	<-f.inGuest
	var out lockedBuffer
	v.RequestDump(&out)
	<-ret
	if s := out.String(); !strings.Contains(s, "KVM's APIC ID 5 mode 1") || !strings.Contains(s, "IRR [0x48]") {
		t.Errorf("dump %q: want KVM's LAPIC, ID 5, xAPIC mode, IRR [0x48]", s)
	}
}
