package vcpu

import (
	"testing"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// govmm's own share of an exit: everything between one KVM_RUN's return
// and the next (dispatch, the bus lookup, the handler, the accounting, the
// LAPIC look before entry), with a fake vCPU standing where KVM is. It is
// what govmm adds to an exit on any host, the part a VMM that only
// answers the exit (bench/floor) does not have; `govmm bench-exits`
// measures the whole exit, KVM's part included, on a host with /dev/kvm.
// The exits are those of bench-exits' guest loop
// (guest/baremetal/floorloop.S): an unclaimed port read, an unclaimed
// MMIO read, an x2APIC TPR write.

// repeatCPU returns the same exit from every KVM_RUN, left times, and
// records nothing (fakeCPU keeps every entry for the tests to check).
type repeatCPU struct {
	*fakeCPU
	left int
	s    step
}

func (r *repeatCPU) Run() error {
	if r.left == 0 {
		return errScriptEnd
	}
	r.left--
	r.last = &r.s
	r.run.ExitReason = r.s.reason
	r.run.ReadyForInterruptInjection, r.run.IFFlag = 1, 1
	r.run.Sync.Regs.RIP = 0x1000 // the loop's code, as KVM's sync registers show it
	return nil
}

// exitLoop is one vCPU that takes exit s n times, its LAPIC in x2APIC
// mode.
func exitLoop(tb testing.TB, s step, n int) (*VCPU, *rig) {
	r := newRig(tb, 1)
	lapic := x2apicMode(tb, r)
	hw := &repeatCPU{fakeCPU: newFake(), left: n, s: s}
	v := New(0, Config{KVM: hw, LAPIC: lapic, Counters: &r.acct.CPUs[0], Bus: &r.bus, Clock: r.clock,
		Done: r.done, Boot: &EntryState{Regs: kvm.Regs{RIP: 0x1000, RFLAGS: 2}}})
	return v, r
}

// x2apicMode puts vCPU 0's LAPIC in x2APIC mode, as the loop's guest has
// it. Its x2APIC MSRs need no range on the rig's bus: the vCPU serves them
// on its own LAPIC (loop_exits.go, x2apic), as the VMM's does.
func x2apicMode(tb testing.TB, r *rig) *vlapic.LAPIC {
	lapic := r.apics.LAPIC(0)
	if err := lapic.SetBase(0xFEE00000 | 1<<11 | 1<<10 | 1<<8); err != nil {
		tb.Fatal(err)
	}
	return lapic
}

func inb(port uint16) step {
	s := open(kvm.ExitIO)
	s.io = kvm.IOExit{Direction: kvm.IOIn, Size: 1, Port: port, Count: 1}
	s.ioData = []byte{0}
	return s
}

func mmioRead(addr uint64) step {
	s := open(kvm.ExitMMIO)
	s.mmio = kvm.MMIOExit{PhysAddr: addr, Len: 4}
	return s
}

var floorExits = []struct {
	name  string
	s     step
	cause exitcause.Cause
}{
	{"port-read", inb(0x99), exitcause.PIOOther},
	{"mmio-read", mmioRead(0xE0000000), exitcause.MMIOOther},
	{"x2apic-tpr-write", msrExit(true, vlapic.MSRX2APICFirst+uint32(vlapic.RegTPR), 0), exitcause.APIC(true, true, uint16(vlapic.RegTPR))},
}

// TestExitLoopCounts: the loop the benchmark times serves and counts each
// exit exactly once, under the cause bench-exits checks.
func TestExitLoopCounts(t *testing.T) {
	for _, c := range floorExits {
		v, r := exitLoop(t, c.s, 1000)
		r.check(v.Run())
		r.wantExits(0, map[exitcause.Cause]uint64{c.cause: 1000})
	}
}

// BenchmarkExit: govmm's user-space time and allocations per exit (target:
// no allocation; the time is the share of an exit that is govmm's own).
func BenchmarkExit(b *testing.B) {
	for _, c := range floorExits {
		b.Run(c.name, func(b *testing.B) {
			v, r := exitLoop(b, c.s, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			r.check(v.Run())
			b.StopTimer()
			if got := r.exits(0, c.cause); got != uint64(b.N) {
				b.Fatalf("%d exits of cause %v counted, want %d", got, c.cause, b.N)
			}
		})
	}
}

// TestAPICSend: apicSend is the class lookup's answer for every APIC
// register, x2APIC MSR or xAPIC offset, read or written.
func TestAPICSend(t *testing.T) {
	for msr := uint32(vlapic.MSRX2APICFirst); msr <= vlapic.MSRX2APICLast; msr++ {
		r := vlapic.RegisterOfMSR(msr)
		for _, x2apic := range []bool{true, false} {
			for _, write := range []bool{false, true} {
				if got, want := apicSend(r), exitcause.APIC(x2apic, write, uint16(r)).Class().IPISend(); got != want {
					t.Errorf("register %#x (x2APIC %v, write %v): apicSend %v, the class says %v", r, x2apic, write, got, want)
				}
			}
		}
	}
}
