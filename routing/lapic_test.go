package routing

import (
	"errors"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// tscVCPU is an exiting vCPU whose KVM reports guestTSC as IA32_TSC (or
// fails to).
type tscVCPU struct {
	exitbus.VCPU // the rest is not called
	guestTSC     uint64
	err          error
	reads        int
}

func (v *tscVCPU) KVM() exitbus.KVM { return v }

func (v *tscVCPU) RunData() *kvm.Run           { return nil }
func (v *tscVCPU) SetRegs(kvm.Regs) error      { return nil }
func (v *tscVCPU) SetMSR(uint32, uint64) error { return nil }
func (v *tscVCPU) GetMSR(index uint32) (uint64, error) {
	if index != MSRTSC {
		return 0, errors.New("not IA32_TSC")
	}
	v.reads++
	return v.guestTSC, v.err
}

// quietSink takes notifications and does nothing.
type quietSink struct{}

func (quietSink) Notify(int) {}

// fixedClock is a Clock at 0 ns whose TSC (the model) reads tsc.
type fixedClock struct{ tsc uint64 }

func (fixedClock) Now() int64    { return 0 }
func (c fixedClock) TSC() uint64 { return c.tsc }

// A TSC_DEADLINE write is judged against the exiting vCPU's TSC as KVM
// reports it, not the clock's model: with the model 20 ms ahead of the
// guest, a deadline 4 ms ahead of the guest arms for 4 ms instead of
// firing at once. A TSC KVM cannot report stops the VM with a message; a
// disarm reads no TSC.
func TestTSCDeadlineReadsKVMsTSC(t *testing.T) {
	const guest = 1_000_000_000
	bus := vlapic.NewBus(1, fixedClock{guest + 20_000_000}, quietSink{}, vlapic.Options{TSCHz: 1e9, BusHz: 1e9, X2APIC: true})
	a := bus.LAPIC(0)
	if err := a.SetBase(a.Base() | vlapic.BaseEXTD); err != nil {
		t.Fatal(err)
	}
	for _, w := range [][2]uint64{{vlapic.MSRX2APICFirst + 0xF, 0x1FF}, {vlapic.MSRX2APICFirst + 0x32, 2<<17 | 0x40}} {
		if _, err := a.WriteMSR(uint32(w[0]), w[1]); err != nil {
			t.Fatal(err)
		}
	}
	l := lapicRanges{bus}
	v := &tscVCPU{guestTSC: guest}
	wr := func(val uint64) error {
		return l.deadline(&exitbus.Access{CPU: 0, Addr: vlapic.MSRTSCDeadline, Write: true, Value: val, VCPU: v})
	}
	if err := wr(guest + 4_000_000); err != nil {
		t.Fatal(err)
	}
	if ns, ok := a.TimerDeadline(); !ok || ns != 4_000_000 {
		t.Fatalf("deadline 4 ms ahead of the guest's TSC: armed %v at %d ns, want 4000000", ok, ns)
	}
	if err := wr(0); err != nil || v.reads != 1 {
		t.Fatalf("disarm: %v, %d TSC reads, want none more than the first", err, v.reads)
	}
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("0 did not disarm")
	}
	v.err = errors.New("EIO")
	if err := wr(guest + 1); err == nil {
		t.Fatal("a TSC KVM could not report: no error")
	}
}
