package vintremap

import (
	"testing"

	"github.com/govmm/govmm/vlapic"
)

func TestTranslateIRTE(t *testing.T) {
	type tc struct {
		name string
		eim  bool
		e    irte
		want vlapic.Message
	}
	msg := func(v uint8, dlm vlapic.DeliveryMode, dm vlapic.DestMode, tm vlapic.Trigger, dest uint32) vlapic.Message {
		return vlapic.Message{Vector: v, Delivery: dlm, DestMode: dm, Trigger: tm, Assert: true, Dest: dest, Source: -1}
	}
	cases := []tc{
		{"xapic physical edge", false, irte{p: true, vector: 0x31, dst: 3 << 8},
			msg(0x31, vlapic.Fixed, vlapic.Physical, vlapic.Edge, 3)},
		{"xapic logical level", false, irte{p: true, dm: true, tm: true, vector: 0x41, dst: 0x0C << 8},
			msg(0x41, vlapic.Fixed, vlapic.Logical, vlapic.Level, 0x0C)},
		{"xapic lowest priority", false, irte{p: true, dm: true, dlm: vlapic.LowestPriority, vector: 0x51, dst: 0xFF << 8},
			msg(0x51, vlapic.LowestPriority, vlapic.Logical, vlapic.Edge, 0xFF)},
		{"xapic RH logical = lowest priority", false, irte{p: true, dm: true, rh: true, vector: 0x52, dst: 1 << 8},
			msg(0x52, vlapic.LowestPriority, vlapic.Logical, vlapic.Edge, 1)},
		{"xapic RH physical stays fixed", false, irte{p: true, rh: true, vector: 0x53, dst: 1 << 8},
			msg(0x53, vlapic.Fixed, vlapic.Physical, vlapic.Edge, 1)},
		{"xapic NMI", false, irte{p: true, dlm: vlapic.NMI, vector: 2, dst: 0 << 8},
			msg(2, vlapic.NMI, vlapic.Physical, vlapic.Edge, 0)},
		{"x2apic physical", true, irte{p: true, vector: 0x61, dst: 300},
			msg(0x61, vlapic.Fixed, vlapic.Physical, vlapic.Edge, 300)},
		{"x2apic cluster level", true, irte{p: true, dm: true, tm: true, vector: 0x62, dst: 5<<16 | 0x8},
			msg(0x62, vlapic.Fixed, vlapic.Logical, vlapic.Level, 5<<16|0x8)},
		{"x2apic broadcast", true, irte{p: true, vector: 0x63, dst: 0xFFFFFFFF},
			msg(0x63, vlapic.Fixed, vlapic.Physical, vlapic.Edge, 0xFFFFFFFF)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, Options{EIM: c.eim})
			r.linux(c.eim)
			r.setIRTE(17, c.e)
			addr, data := remappableMSI(17, true, 0)
			m, err := r.u.TranslateMSI(addr, data, 0x0010)
			if err != nil || m != c.want {
				t.Fatalf("got %+v %v, want %+v", m, err, c.want)
			}
			if n := r.u.Snapshot().Counters.Translations; n != 1 {
				t.Fatalf("translations %d", n)
			}
		})
	}
}

func TestHandleAndSubhandle(t *testing.T) {
	r := newRig(t, Options{})
	r.linux(false)
	for i := range 4 {
		r.setIRTE(100+i, irte{p: true, vector: uint8(0x70 + i), dst: 1 << 8})
	}
	r.setIRTE(0x8001, irte{p: true, vector: 0x90, dst: 1 << 8})
	for _, c := range []struct {
		handle uint32
		shv    bool
		sub    uint16
		vector uint8
	}{
		{100, false, 0, 0x70},
		{100, false, 3, 0x70}, // SHV clear: data ignored
		{100, true, 0, 0x70},
		{100, true, 2, 0x72}, // multi-MSI: handle + subhandle
		{0x8000, true, 1, 0x90},
		{0x8001, false, 0, 0x90}, // handle bit 15 in address bit 2
	} {
		addr, data := remappableMSI(c.handle, c.shv, c.sub)
		m, err := r.u.TranslateMSI(addr, data, 0)
		if err != nil || m.Vector != c.vector {
			t.Errorf("handle %#x shv %v sub %d: %+v %v, want vector %#x", c.handle, c.shv, c.sub, m, err, c.vector)
		}
	}
	// Data bits 31:16 are reserved in a remappable request.
	addr, _ := remappableMSI(100, true, 0)
	_, err := r.u.TranslateMSI(addr, 1<<16, 0)
	if f := wantFault(t, err, ReasonRequestReserved); f.Index != 100 {
		t.Fatalf("index %d", f.Index)
	}
	if _, err := r.u.TranslateMSI(0xFED00010, 0, 0); err != ErrNotInterrupt {
		t.Fatalf("non-interrupt address: %v", err)
	}
}

func TestTranslateIOAPIC(t *testing.T) {
	const ioapicSID = 0xF0F8 // QEMU's IOAPIC source-id: bus 0xF0, dev 0x1F
	r := newRig(t, Options{EIM: true})
	r.linux(true)
	r.setIRTE(0x8007, irte{p: true, tm: true, vector: 0x55, dst: 260, svt: svtSID, sid: ioapicSID})
	// Remappable RTE as Linux writes it (IR_IO_APIC_route_entry): index
	// 14:0 in 63:49, index 15 in bit 11, the vector repeated for EOI, the
	// pin's trigger in bit 15, polarity and mask left to the IOAPIC.
	rte := uint64(7)<<49 | 1<<48 | 1<<11 | 1<<15 | 1<<13 | 0x55
	m, err := r.u.TranslateIOAPIC(rte, ioapicSID)
	want := vlapic.Message{Vector: 0x55, Trigger: vlapic.Level, Assert: true, Dest: 260, Source: -1}
	if err != nil || m != want {
		t.Fatalf("got %+v %v, want %+v", m, err, want)
	}
	// The wrong IOAPIC.
	_, err = r.u.TranslateIOAPIC(rte, 0xF0F0)
	wantFault(t, err, ReasonSourceID)
	// A compatibility RTE is blocked while remapping is on.
	_, err = r.u.TranslateIOAPIC(0x0100_0000_0000_0031, ioapicSID)
	wantFault(t, err, ReasonCompatBlocked)
	// And decoded as vioapic does when remapping is off.
	r.gcmd &^= gIRE
	r.command(0, GSTSIRES, 0)
	m, err = r.u.TranslateIOAPIC(0x0300_0000_0000_8831, ioapicSID)
	want = vlapic.Message{Vector: 0x31, DestMode: vlapic.Logical, Trigger: vlapic.Level, Assert: true, Dest: 3, Source: -1}
	if err != nil || m != want {
		t.Fatalf("compat RTE: %+v %v, want %+v", m, err, want)
	}
}

func TestCompatibilityFormat(t *testing.T) {
	// dest 2, logical, RH; level-assert, level, lowest priority, vector 0x44.
	addr, data := uint64(0xFEE0200C), uint32(0xC144)
	want := vlapic.Message{Vector: 0x44, Delivery: vlapic.LowestPriority, DestMode: vlapic.Logical,
		Trigger: vlapic.Level, Assert: true, Dest: 2, Source: -1}
	r := newRig(t, Options{EIM: true})
	if m, err := r.u.TranslateMSI(addr, data, 0); err != nil || m != want {
		t.Fatalf("remapping off: %+v %v", m, err)
	}
	r.linux(false)
	_, err := r.u.TranslateMSI(addr, data, 0x0008)
	if f := wantFault(t, err, ReasonCompatBlocked); f.SID != 0x0008 {
		t.Fatalf("sid %#x", f.SID)
	}
	r.gcmd |= gCFI
	r.command(0, GSTSCFIS, GSTSCFIS)
	if m, err := r.u.TranslateMSI(addr, data, 0); err != nil || m != want {
		t.Fatalf("CFIS: %+v %v", m, err)
	}
	// In x2APIC mode (EIME) compatibility format is blocked whatever CFIS says.
	r.setTable(true)
	_, err = r.u.TranslateMSI(addr, data, 0)
	wantFault(t, err, ReasonCompatBlocked)
	// Edge MSIs assert whatever bit 14 says.
	if m := vlapic.DecodeCompatMSI(0xFEE00000, 0x30); !m.Assert {
		t.Fatal("edge MSI without bit 14 does not assert")
	}
}

func TestNoEntryCache(t *testing.T) {
	// Every translation reads the IRTE from memory, so a change is seen
	// even before the invalidation Linux sends after modify_irte.
	r := newRig(t, Options{})
	r.linux(false)
	addr, data := remappableMSI(9, true, 0)
	r.setIRTE(9, irte{p: true, vector: 0x40, dst: 1 << 8})
	m1, _ := r.u.TranslateMSI(addr, data, 0)
	r.setIRTE(9, irte{p: true, vector: 0x41, dst: 2 << 8})
	m2, _ := r.u.TranslateMSI(addr, data, 0)
	r.submit([2]uint64{descIEC | 1<<4 | 9<<32, 0}) // index-selective flush
	m3, _ := r.u.TranslateMSI(addr, data, 0)
	if m1.Vector != 0x40 || m2.Vector != 0x41 || m3 != m2 {
		t.Fatalf("%+v %+v %+v", m1, m2, m3)
	}
}
