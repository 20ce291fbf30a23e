package routing

import (
	"encoding/binary"
	"testing"

	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
)

// countingObserver records what the platform told it.
type countingObserver struct {
	fired, lost, msis, remapped, logical, physical, faults, traces int
}

func (o *countingObserver) IOAPICFired() { o.fired++ }
func (o *countingObserver) IOAPICLost()  { o.lost++ }
func (o *countingObserver) MSI()         { o.msis++ }
func (o *countingObserver) Remapped()    { o.remapped++ }
func (o *countingObserver) Fault(uint8)  { o.faults++ }
func (o *countingObserver) Delivered(logical bool) {
	if logical {
		o.logical++
	} else {
		o.physical++
	}
}
func (o *countingObserver) TraceDeviceMSI() vlapic.Trace { o.traces++; return 7 }

type nopSink struct{}

func (nopSink) Notify(int) {}

// The platform delivers a compatibility-format MSI to its LAPIC and an
// IOAPIC pin's interrupt, and tells its observer each step: the MSI
// counted, traced and delivered physically; the pin fired, and lost when
// its entry names no LAPIC.
func TestPlatformReports(t *testing.T) {
	mem, err := memory.New(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mem.Close)
	apics := vlapic.NewBus(2, fixedClock{}, nopSink{}, vlapic.Options{TSCHz: 1e9, BusHz: 1e9})
	for i := range 2 { // software-enable both LAPICs (SVR bit 8)
		apics.LAPIC(i).WriteMMIO(0xF0, []byte{0xFF, 1, 0, 0})
	}
	var obs countingObserver
	p := NewPlatform(apics, mem, &obs, false, false)

	// An MSI to APIC ID 1, vector 0x41, fixed, edge.
	if !p.SendMSI(0xFEE00000|1<<12, 0x41, 0x10) {
		t.Fatal("the MSI was not delivered")
	}
	if s := apics.LAPIC(1).Snapshot(); s.IRR[0x41/32]&(1<<(0x41%32)) == 0 {
		t.Errorf("vector 0x41 not requested at APIC ID 1: IRR %#x", s.IRR)
	}
	if obs.msis != 1 || obs.traces != 1 || obs.physical != 1 || obs.logical != 0 {
		t.Errorf("MSI observed as %+v", obs)
	}
	// A write outside the interrupt range goes nowhere, but is an MSI.
	if p.SendMSI(0x1000, 0x41, 0x10) {
		t.Error("a write to 0x1000 was delivered")
	}

	// IOAPIC pin 3: vector 0x52, edge, physical destination APIC ID 1,
	// unmasked; then pin 4 aimed at APIC ID 9, which no LAPIC has.
	rte := func(pin int, lo, hi uint32) {
		for i, v := range []uint32{lo, hi} {
			p.ioapic.WriteMMIO(0x00, binary.LittleEndian.AppendUint32(nil, uint32(0x10+2*pin+i)))
			p.ioapic.WriteMMIO(0x10, binary.LittleEndian.AppendUint32(nil, v))
		}
	}
	rte(3, 0x52, 1<<24)
	rte(4, 0x53, 9<<24)
	p.SetLine(3, true)
	p.SetLine(4, true)
	if obs.fired != 2 || obs.lost != 1 || obs.physical != 3 {
		t.Errorf("pins observed as %+v, want 2 fired, 1 lost", obs)
	}
}
