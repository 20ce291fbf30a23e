package vcpu

import (
	"runtime"
	"testing"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// sendIPI writes vCPU from's x2APIC ICR: vector vec to APIC ID to.
func (r *rig) sendIPI(from, to int, vec uint8) {
	r.t.Helper()
	if _, err := r.apics.LAPIC(from).WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegICR), uint64(to)<<32|uint64(vec)); err != nil {
		r.t.Fatal(err)
	}
}

// The exits an IPI causes its receiver are charged to the IPI's kind
// (its trace, accounting.Observer): the HLT exit it woke, the kick it made, the interrupt
// window it waited for. A vector no IPI sent (a device's) charges none.
func TestExitsChargedToTheIPI(t *testing.T) {
	r := newRigWith(t, 1, vlapic.Options{X2APIC: true})
	a := r.apics.LAPIC(0)
	if err := a.SetBase(a.Base() | vlapic.BaseEXTD); err != nil {
		t.Fatal(err)
	}
	r.enable(0)
	// The guest halts (a self-IPI wakes it), then runs until an IPI
	// kicks it, then exits with IF=0 while an IPI sent in that step
	// waits (the window), then halts until a device's vector.
	inGuest := step{waitKick: true, ready: true, ifFlag: true}
	closed := exitAt(kvm.ExitIO, false, false)
	closed.io, closed.ioData = kvm.IOExit{Direction: 1, Size: 1, Port: 0x81, Count: 1}, []byte{0}
	closed.hold = true
	closed.guest = func(*fakeCPU) { r.sendIPI(0, 0, 0x60) }
	f := newFake(open(kvm.ExitHLT), inGuest, closed, open(kvm.ExitIRQWindowOpen), open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	if _, err := a.WriteMSR(vlapic.MSRX2APICFirst+uint32(vlapic.RegICR), 1<<18|0x40); err != nil { // self
		t.Fatal(err)
	}
	<-f.inGuest
	r.sendIPI(0, 0, 0x50)
	for r.exits(0, exitcause.HLT) < 2 || r.cpus[0].State() != StateHalted {
		runtime.Gosched()
	}
	r.deliver(0, 0x70) // untraced: a device's
	wait()
	got := r.acct.CPUs[0].Snapshot().IPIRecvExits
	if got[accounting.IPISelf] != 1 || got[accounting.IPIX2APICPhysical] != 2 {
		t.Errorf("exits charged: self %d (want 1: the HLT), x2apic_physical %d (want 2: the kick and the window); all %v",
			got[accounting.IPISelf], got[accounting.IPIX2APICPhysical], got)
	}
	var sum uint64
	for _, n := range got {
		sum += n
	}
	if sum != 3 {
		t.Errorf("%d exits charged in all, want 3 (the device's wake-up is no IPI's)", sum)
	}
	r.wantExits(0, map[exitcause.Cause]uint64{exitcause.HLT: 2, exitcause.Kick: 1, exitcause.PIOOther: 2,
		exitcause.IRQWindow: 1})
}

// A device's MSI carries the kind DeviceMSI (vmm traces it): the HLT exit
// it wakes is charged to device interrupts, to no IPI.
func TestExitsChargedToTheDeviceMSI(t *testing.T) {
	r := newRigWith(t, 1, vlapic.Options{X2APIC: true})
	a := r.apics.LAPIC(0)
	if err := a.SetBase(a.Base() | vlapic.BaseEXTD); err != nil {
		t.Fatal(err)
	}
	r.enable(0)
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	r.apics.Deliver(vlapic.Message{Vector: 0x70, Delivery: vlapic.Fixed, Dest: 0, Source: -1,
		Trace: r.obs.Trace(accounting.DeviceMSI)})
	wait()
	s := r.acct.CPUs[0].Snapshot()
	if n := accounting.DeviceIRQExits(&s.CPUCounters); n != 1 || s.DeviceIRQHLT != 1 {
		t.Errorf("%d exits charged to device MSIs (%d for the HLT), want 1: the HLT it woke", n, s.DeviceIRQHLT)
	}
	for k, n := range s.IPIRecvExits {
		if n != 0 {
			t.Errorf("%d exits charged to IPIs of kind %v, want none", n, accounting.IPIKind(k))
		}
	}
}
