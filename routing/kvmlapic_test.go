package routing

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
)

// fakeKVMIRQ records what KVMLAPICs asked of KVM.
type fakeKVMIRQ struct {
	msis      []kvm.MSI
	tables    [][]kvm.IRQRoutingEntry
	accept    bool  // SignalMSI's answer: a LAPIC took it
	routeErr  error // what SetGSIRouting answers
	signalErr error
}

func (f *fakeKVMIRQ) SignalMSI(m kvm.MSI) (bool, error) {
	f.msis = append(f.msis, m)
	return f.accept, f.signalErr
}

func (f *fakeKVMIRQ) SetGSIRouting(r []kvm.IRQRoutingEntry) error {
	f.tables = append(f.tables, append([]kvm.IRQRoutingEntry(nil), r...))
	return f.routeErr
}

// EncodeMSI puts a message in the form KVM_SIGNAL_MSI takes with
// KVM_X2APIC_API_USE_32BIT_IDS: destination bits 7:0 in address bits
// 19:12, bits 31:8 in address_hi; logical mode bit 2; data's vector,
// delivery mode, level and trigger bits.
func TestEncodeMSI(t *testing.T) {
	for _, c := range []struct {
		m            vlapic.Message
		lo, hi, data uint32
	}{
		{vlapic.Message{Vector: 0x41, Dest: 1, Assert: true}, 0xFEE01000, 0, 0x4041},
		{vlapic.Message{Vector: 0x61, Dest: 0x3, DestMode: vlapic.Logical, Trigger: vlapic.Level, Assert: true}, 0xFEE03004, 0, 0xC061},
		{vlapic.Message{Vector: 0x30, Dest: 0x1_2345, Delivery: vlapic.LowestPriority, Assert: true}, 0xFEE45000, 0x1_2300, 0x4130},
		{vlapic.Message{Delivery: vlapic.NMI, Dest: 0xFFFFFFFF, Assert: true}, 0xFEEFF000, 0xFFFFFF00, 0x4400},
	} {
		got := EncodeMSI(c.m)
		if got.AddressLo != c.lo || got.AddressHi != c.hi || got.Data != c.data {
			t.Errorf("%+v: got lo %#x hi %#x data %#x, want %#x %#x %#x", c.m, got.AddressLo, got.AddressHi, got.Data, c.lo, c.hi, c.data)
		}
	}
}

// The platform on KVM's LAPICs: an MSI goes to KVM as one KVM_SIGNAL_MSI;
// a level-triggered IOAPIC pin's message is routed first (GSI = pin), once
// while it stays the same, so that KVM sends its EOI back; an edge pin is
// never routed; the EOI KVM sends back reaches the IOAPIC, whose still-
// high line fires again; a refused ioctl is reported, and the route it did
// not set is set again at the next fire.
func TestPlatformOnKVMLAPICs(t *testing.T) {
	mem, err := memory.New(2 << 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mem.Close)
	f := &fakeKVMIRQ{accept: true}
	var refused []error
	k := NewKVMLAPICs(f, 4, func(err error) { refused = append(refused, err) })
	var obs countingObserver
	p := NewPlatform(k, mem, &obs, false, false)
	if k.EOI == nil {
		t.Fatal("the platform gave KVMLAPICs no EOI handler")
	}

	var took []int
	if !p.SendMSIAccepted(0xFEE00000|2<<12, 0x45, 0x10, func(cpu int) { took = append(took, cpu) }) || len(f.msis) != 1 ||
		f.msis[0].AddressLo != 0xFEE02000 || f.msis[0].Data != 0x4045 {
		t.Fatalf("MSI: signalled %+v", f.msis)
	}
	if len(took) != 1 || took[0] != 2 {
		t.Errorf("a physical MSI to APIC ID 2: accepted by %v, want [2]", took)
	}
	took = nil
	if !p.SendMSIAccepted(0xFEE00000|3<<12|1<<2, 0x46, 0x10, func(cpu int) { took = append(took, cpu) }) || len(took) != 0 {
		t.Errorf("a logical MSI: accepted by %v, want nobody named (KVM alone knows)", took)
	}
	rte := func(pin int, lo, hi uint32) {
		for i, v := range []uint32{lo, hi} {
			p.ioapic.WriteMMIO(0x00, binary.LittleEndian.AppendUint32(nil, uint32(0x10+2*pin+i)))
			p.ioapic.WriteMMIO(0x10, binary.LittleEndian.AppendUint32(nil, v))
		}
	}
	rte(5, 0x52, 1<<24)        // edge
	rte(11, 0x61|1<<15, 1<<24) // level
	p.SetLine(5, true)
	if len(f.tables) != 0 {
		t.Errorf("an edge pin was routed: %+v", f.tables)
	}
	p.SetLine(11, true)
	if len(f.tables) != 1 || len(f.tables[0]) != 1 || f.tables[0][0].GSI != 11 || f.tables[0][0].Type != kvm.IRQRoutingMSI ||
		f.tables[0][0].Data != 0xC061 || f.tables[0][0].AddressLo != 0xFEE01000 {
		t.Fatalf("level pin 11: routes %+v", f.tables)
	}
	n := len(f.msis)
	k.EOI(0x61) // KVM_EXIT_IOAPIC_EOI: Remote IRR cleared, the line still high fires again
	if len(f.msis) != n+1 || len(f.tables) != 1 {
		t.Errorf("after the EOI: %d more MSIs (want 1), %d routing tables (want 1: unchanged)", len(f.msis)-n, len(f.tables))
	}

	f.routeErr = errors.New("EINVAL")
	rte(13, 0x71|1<<15, 1<<24)
	p.SetLine(13, true)
	if len(refused) != 1 {
		t.Fatalf("a refused KVM_SET_GSI_ROUTING reported %d times, want once", len(refused))
	}
	f.routeErr = nil
	k.EOI(0x71) // the pin's Remote IRR clears, the still-high line fires again
	if last := f.tables[len(f.tables)-1]; len(last) != 2 || last[1].GSI != 13 {
		t.Errorf("pin 13's route not set again at its next fire: %+v", last)
	}

	f.signalErr = errors.New("EINVAL")
	if p.SendMSI(0xFEE00000, 0x45, 0x10) || len(refused) != 2 {
		t.Errorf("a refused KVM_SIGNAL_MSI: delivered, or reported %d times (want 2 in all)", len(refused))
	}
}
