// Tests of the register file: reset values, priorities, EOI, x2APIC #GP
// rules, ESR, software disable, INIT/SIPI, APIC_BASE and MMIO access sizes.

package vlapic

import (
	"errors"
	"slices"
	"testing"
)

func TestResetState(t *testing.T) {
	b := NewBus(2, &fakeClock{}, nil, Options{})
	for i := range 2 {
		a := b.LAPIC(i)
		want := uint64(DefaultBase | BaseEN)
		if i == 0 {
			want |= BaseBSP
		}
		if a.Base() != want || a.Mode() != ModeXAPIC {
			t.Fatalf("cpu %d: base %#x mode %d", i, a.Base(), a.Mode())
		}
		if addr, ok := a.PageBase(); addr != DefaultBase || !ok {
			t.Fatalf("page %#x %v", addr, ok)
		}
		for r, want := range map[Register]uint32{
			RegID: uint32(i) << 24, RegVersion: 0x60014, RegSVR: 0xFF, RegDFR: 0xFFFFFFFF,
			RegLDR: 0, RegTPR: 0, RegPPR: 0, RegLVTTimer: lvtMasked, RegLVTLINT0: lvtMasked,
			RegLVTCMCI: lvtMasked, RegLVTError: lvtMasked, RegTimerDCR: 0, RegICR: 0,
		} {
			if got := rd(t, a, r); got != want {
				t.Errorf("cpu %d reg %#x = %#x, want %#x", i, r, got, want)
			}
		}
	}
}

func TestPPRAndPendingVector(t *testing.T) {
	tests := []struct {
		tpr, isr uint32 // isr: vector in service, 0 for none
		want     uint32
	}{
		{0, 0, 0}, {0x35, 0, 0x35}, {0x35, 0x41, 0x40}, {0x45, 0x41, 0x45},
		{0x40, 0x4F, 0x40}, {0x3F, 0x40, 0x40}, {0xFF, 0x80, 0xFF},
	}
	for _, tc := range tests {
		b := newBus(t, 1, false)
		a := b.LAPIC(0)
		if tc.isr != 0 {
			b.Deliver(fixed(uint8(tc.isr), Physical, 0))
			if v, ok := a.Acknowledge(); !ok || uint32(v) != tc.isr {
				t.Fatalf("ack %#x %v", v, ok)
			}
		}
		wr(t, a, RegTPR, tc.tpr)
		if got := rd(t, a, RegPPR); got != tc.want {
			t.Errorf("TPR %#x ISR %#x: PPR %#x, want %#x", tc.tpr, tc.isr, got, tc.want)
		}
	}

	b := newBus(t, 1, true)
	a := b.LAPIC(0)
	wr(t, a, RegTPR, 0x50)
	b.Deliver(fixed(0x55, Physical, 0))
	if v, ok := a.PendingVector(); ok {
		t.Fatalf("vector %#x in TPR's class got through", v)
	}
	if _, ok := a.Acknowledge(); ok {
		t.Fatal("acknowledged a masked vector")
	}
	b.Deliver(fixed(0x61, Physical, 0))
	if v, ok := a.PendingVector(); !ok || v != 0x61 {
		t.Fatalf("pending %#x %v, want 0x61", v, ok)
	}
	if v, _ := a.Acknowledge(); v != 0x61 {
		t.Fatalf("ack %#x", v)
	}
	// 0x61 in service masks 0x55 too, until its EOI.
	wr(t, a, RegTPR, 0)
	if _, ok := a.PendingVector(); ok {
		t.Fatal("0x55 pending while 0x61 in service")
	}
	wr(t, a, RegEOI, 0)
	if v, ok := a.PendingVector(); !ok || v != 0x55 {
		t.Fatalf("after EOI: %#x %v", v, ok)
	}
	// Software-disabled: nothing is presented.
	wr(t, a, RegSVR, 0xFF)
	if _, ok := a.PendingVector(); ok {
		t.Fatal("pending while software-disabled")
	}
}

func TestCR8(t *testing.T) {
	b := newBus(t, 1, false)
	a := b.LAPIC(0)
	wr(t, a, RegTPR, 0x9A)
	if a.CR8() != 9 {
		t.Fatalf("CR8 %d", a.CR8())
	}
	a.SetCR8(9) // unchanged class keeps TPR[3:0]
	if got := rd(t, a, RegTPR); got != 0x9A {
		t.Fatalf("TPR %#x", got)
	}
	a.SetCR8(0x13)
	if got := rd(t, a, RegTPR); got != 0x30 || rd(t, a, RegPPR) != 0x30 {
		t.Fatalf("TPR %#x PPR %#x", got, rd(t, a, RegPPR))
	}
}

func TestEOIHandler(t *testing.T) {
	for _, x2 := range []bool{false, true} {
		b := newBus(t, 2, x2)
		var got []uint8
		b.SetEOIHandler(func(v uint8) { got = append(got, v) })
		a := b.LAPIC(1)
		b.Deliver(Message{Vector: 0x30, Trigger: Level, Assert: true, Dest: 1, Source: -1})
		b.Deliver(Message{Vector: 0x40, Trigger: Edge, Dest: 1, Source: -1})
		if s := a.Snapshot(); s.TMR[1] != 1<<16 {
			t.Fatalf("TMR %#x", s.TMR)
		}
		a.Acknowledge()
		wr(t, a, RegEOI, 0) // 0x40, edge
		if len(got) != 0 {
			t.Fatalf("edge EOI called handler: %v", got)
		}
		a.Acknowledge()
		wr(t, a, RegEOI, 0) // 0x30, level
		if !slices.Equal(got, []uint8{0x30}) {
			t.Fatalf("level EOI: %v", got)
		}
		wr(t, a, RegEOI, 0) // nothing in service
		if len(got) != 1 {
			t.Fatalf("spurious EOI: %v", got)
		}
		// A level de-assert is not an interrupt.
		if n := b.Deliver(Message{Vector: 0x31, Trigger: Level, Dest: 1, Source: -1}); n != 0 {
			t.Fatalf("level de-assert accepted")
		}
	}
}

func msr(r Register) uint32 { return MSRX2APICFirst + uint32(r) }

func TestX2APICGP(t *testing.T) {
	b := newBus(t, 2, true)
	a := b.LAPIC(0)
	writes := []struct {
		name string
		msr  uint32
		v    uint64
	}{
		{"ID", msr(RegID), 5},
		{"version", msr(RegVersion), 0},
		{"LDR", msr(RegLDR), 1},
		{"PPR", msr(RegPPR), 0},
		{"ISR", msr(RegISR0 + 3), 0},
		{"TMR", msr(RegTMR0), 0},
		{"IRR", msr(RegIRR0 + 7), 0},
		{"CCR", msr(RegTimerCCR), 0},
		{"DFR", msr(RegDFR), 0xFFFFFFFF},
		{"ICR2", msr(RegICR2), 0},
		{"APR", msr(RegAPR), 0},
		{"absent", msr(0x04), 0},
		{"absent high", 0x8FF, 0},
		{"EOI non-zero", msr(RegEOI), 1},
		{"ESR non-zero", msr(RegESR), 1},
		{"TPR reserved", msr(RegTPR), 0x100},
		{"TPR high half", msr(RegTPR), 1 << 32},
		{"SVR reserved", msr(RegSVR), 0x11FF},
		{"LVT timer reserved", msr(RegLVTTimer), 0x800},
		{"LVT error delivery mode", msr(RegLVTError), 0x400},
		{"DCR reserved", msr(RegTimerDCR), 4},
		{"ICR reserved 13", msr(RegICR), 1<<13 | 0x40},
		{"ICR reserved 16", msr(RegICR), 1<<16 | 0x40},
		{"ICR reserved 20", msr(RegICR), 1<<20 | 0x40},
		{"SELF_IPI reserved", msr(RegSelfIPI), 0x140},
		{"not an APIC MSR", 0x10, 0},
	}
	for _, w := range writes {
		if _, err := a.WriteMSR(w.msr, w.v); !errors.Is(err, ErrGP) {
			t.Errorf("write %s (%#x <- %#x): %v, want #GP", w.name, w.msr, w.v, err)
		}
	}
	for _, r := range []Register{RegEOI, RegSelfIPI, RegDFR, RegICR2, RegAPR, RegRRD, 0x01, 0x3D} {
		if _, err := a.ReadMSR(msr(r)); !errors.Is(err, ErrGP) {
			t.Errorf("read %#x: %v, want #GP", msr(r), err)
		}
	}
	if len(b.withIRR(0x40)) != 0 {
		t.Fatal("a #GP'd ICR write was sent")
	}
	// Legal ones.
	for _, w := range []struct {
		msr uint32
		v   uint64
	}{{msr(RegEOI), 0}, {msr(RegESR), 0}, {msr(RegTPR), 0xFF}, {msr(RegLVTLINT0), 0x1A7FF}, {msr(RegICR), 0x1_0000_C040}} {
		if _, err := a.WriteMSR(w.msr, w.v); err != nil {
			t.Errorf("write %#x <- %#x: %v", w.msr, w.v, err)
		}
	}
	if got := b.withIRR(0x40); !slices.Equal(got, []int{1}) {
		t.Fatalf("ICR to 1: %v", got)
	}
	if v, _ := a.ReadMSR(msr(RegICR)); v != 0x1_0000_C040 {
		t.Fatalf("ICR reads %#x", v)
	}
	// xAPIC mode: every x2APIC MSR #GPs.
	c := newBus(t, 1, false).LAPIC(0)
	if _, err := c.ReadMSR(msr(RegTPR)); !errors.Is(err, ErrGP) {
		t.Fatal("x2APIC read in xAPIC mode")
	}
	if _, err := c.WriteMSR(msr(RegTPR), 0); !errors.Is(err, ErrGP) {
		t.Fatal("x2APIC write in xAPIC mode")
	}
}

func TestSelfIPIAndESR(t *testing.T) {
	b := newBus(t, 2, true)
	a := b.LAPIC(1)
	eff, err := a.WriteMSR(msr(RegSelfIPI), 0x45)
	if err != nil || !eff.IPI || eff.Targets != 1 || eff.Msg.Shorthand != Self {
		t.Fatalf("self IPI: %+v %v", eff, err)
	}
	if got := b.withIRR(0x45); !slices.Equal(got, []int{1}) {
		t.Fatalf("self IPI went to %v", got)
	}
	// An illegal vector: the sender flags "send illegal", the receiver
	// "received illegal" and takes nothing; ESR shows both once latched.
	wr(t, b.LAPIC(0), RegLVTError, 0xEE)
	eff = sendICR(t, b.LAPIC(0), Message{Vector: 7, Dest: 1})
	if eff.Targets != 0 || b.withIRR(7) != nil {
		t.Fatalf("illegal vector accepted: %+v", eff)
	}
	if rd(t, b.LAPIC(0), RegESR) != 0 {
		t.Fatal("ESR changed before a write latched it")
	}
	wr(t, b.LAPIC(0), RegESR, 0)
	wr(t, a, RegESR, 0)
	if e0, e1 := rd(t, b.LAPIC(0), RegESR), rd(t, a, RegESR); e0 != esrSendIllegal || e1 != esrRecvIllegal {
		t.Fatalf("ESR sender %#x receiver %#x", e0, e1)
	}
	if got := b.withIRR(0xEE); !slices.Equal(got, []int{0}) {
		t.Fatalf("error LVT interrupt on %v", got)
	}
	wr(t, a, RegESR, 0)
	if rd(t, a, RegESR) != 0 {
		t.Fatal("ESR not cleared by the next write")
	}
	// Self IPI with an illegal vector sets both on the same LAPIC.
	if _, err := a.WriteMSR(msr(RegSelfIPI), 3); err != nil {
		t.Fatal(err)
	}
	wr(t, a, RegESR, 0)
	if e := rd(t, a, RegESR); e != esrSendIllegal|esrRecvIllegal {
		t.Fatalf("self illegal ESR %#x", e)
	}
	// A device message with an illegal vector.
	b2 := newBus(t, 1, false)
	b2.Deliver(fixed(15, Physical, 0))
	wr(t, b2.LAPIC(0), RegESR, 0)
	if e := rd(t, b2.LAPIC(0), RegESR); e != esrRecvIllegal || b2.withIRR(15) != nil {
		t.Fatalf("device illegal: ESR %#x", e)
	}
}

func TestSoftwareDisable(t *testing.T) {
	b := newBus(t, 2, false)
	a := b.LAPIC(1)
	wr(t, a, RegLVTTimer, 0x20)
	wr(t, a, RegLVTLINT0, 0x700)
	wr(t, a, RegSVR, 0xFF)
	for _, r := range []Register{RegLVTTimer, RegLVTLINT0, RegLVTError} {
		if rd(t, a, r)&lvtMasked == 0 {
			t.Errorf("LVT %#x unmasked while software-disabled", r)
		}
	}
	wr(t, a, RegLVTTimer, 0x21)
	if got := rd(t, a, RegLVTTimer); got != lvtMasked|0x21 {
		t.Fatalf("LVT timer %#x: mask must stay set", got)
	}
	// Fixed is dropped; NMI, INIT and SIPI are latched.
	if n := b.Deliver(fixed(0x40, Physical, 1)); n != 0 {
		t.Fatal("fixed accepted while software-disabled")
	}
	for _, d := range []DeliveryMode{NMI, INIT, StartUp, ExtINT} {
		if n := b.Deliver(Message{Delivery: d, Vector: 0x9, Dest: 1, Trigger: Edge, Source: -1}); n != 1 {
			t.Fatalf("delivery mode %d refused", d)
		}
	}
	if ev := a.TakeEvents(); ev != (Events{NMIs: 1, INIT: true, SIPI: true, SIPIVector: 9, ExtINT: true, INITFrom: -1}) {
		t.Fatalf("events %+v", ev)
	}
	if ev := a.TakeEvents(); ev != (Events{}) {
		t.Fatalf("events not cleared: %+v", ev)
	}
	wr(t, a, RegSVR, 0x1FF)
	if n := b.Deliver(fixed(0x40, Physical, 1)); n != 1 {
		t.Fatal("fixed refused after re-enable")
	}
	// Hardware-disabled takes nothing.
	must(t, a.SetBase(DefaultBase))
	if n := b.Deliver(Message{Delivery: NMI, Dest: 1, Source: -1}); n != 0 {
		t.Fatal("NMI accepted by hardware-disabled LAPIC")
	}
}

func TestInitSIPI(t *testing.T) {
	b := newBus(t, 3, false)
	bsp, ap := b.LAPIC(0), b.LAPIC(2)
	wr(t, ap, RegTPR, 0x20)
	wr(t, ap, RegLDR, 0x4<<24)
	b.Deliver(fixed(0x50, Physical, 2))
	// INIT assert + de-assert + SIPI, all-excluding-self as test kernels do.
	sendICR(t, bsp, Message{Delivery: INIT, Trigger: Level, Assert: true, Shorthand: AllExcludingSelf})
	eff := sendICR(t, bsp, Message{Delivery: INIT, Trigger: Level, Shorthand: AllExcludingSelf})
	if eff.Targets != 0 {
		t.Fatalf("INIT de-assert accepted by %d", eff.Targets)
	}
	sendICR(t, bsp, Message{Delivery: StartUp, Vector: 0x9A, Shorthand: AllExcludingSelf})
	if ev := ap.TakeEvents(); ev != (Events{INIT: true, SIPI: true, SIPIVector: 0x9A, INITFrom: 0}) { // from the BSP's ICR
		t.Fatalf("AP events %+v", ev)
	}
	if ev := bsp.TakeEvents(); ev != (Events{}) {
		t.Fatalf("BSP events %+v", ev)
	}
	// INIT drops a SIPI that came before it.
	b.Deliver(Message{Delivery: StartUp, Vector: 1, Dest: 1, Source: -1})
	b.Deliver(Message{Delivery: INIT, Dest: 1, Source: -1})
	if ev := b.LAPIC(1).TakeEvents(); ev != (Events{INIT: true, INITFrom: -1}) {
		t.Fatalf("INIT after SIPI: %+v", ev)
	}
	wr(t, ap, RegID, 0x22<<24)
	ap.InitReset()
	s := ap.Snapshot()
	if s.ID != 0x22 || s.TPR != 0 || s.LDR != 0 || s.SVR != 0xFF || s.IRR != [8]uint32{} ||
		s.DFR != 0xFFFFFFFF || s.LVT.Timer != lvtMasked || s.Base != DefaultBase|BaseEN {
		t.Fatalf("after INIT: %+v", s)
	}
	// The routing tables forgot the LDR.
	if n := b.Deliver(Message{Delivery: NMI, DestMode: Logical, Dest: 4, Source: -1}); n != 0 {
		t.Fatal("old LDR still routed")
	}
	// x2APIC keeps its mode and derived LDR over INIT.
	x := newBus(t, 20, true).LAPIC(18)
	x.InitReset()
	if x.Mode() != ModeX2APIC || x.Snapshot().LDR != 1<<16|1<<2 {
		t.Fatalf("x2APIC after INIT: %+v", x.Snapshot())
	}
}

func TestSetBase(t *testing.T) {
	const en, extd = BaseEN, BaseEXTD
	tests := []struct {
		name string
		x2   bool // CPUID offers x2APIC
		from uint64
		to   uint64
		err  bool
		mode Mode
	}{
		{"relocate", true, DefaultBase | en, 0xFED40000 | en, false, ModeXAPIC},
		{"to x2APIC", true, DefaultBase | en, DefaultBase | en | extd, false, ModeX2APIC},
		{"x2APIC without CPUID", false, DefaultBase | en, DefaultBase | en | extd, true, ModeXAPIC},
		{"disable", true, DefaultBase | en, DefaultBase, false, ModeDisabled},
		{"x2APIC to disabled", true, DefaultBase | en | extd, DefaultBase, false, ModeDisabled},
		{"x2APIC to xAPIC", true, DefaultBase | en | extd, DefaultBase | en, true, ModeX2APIC},
		{"disabled to x2APIC", true, DefaultBase, DefaultBase | en | extd, true, ModeDisabled},
		{"disabled to xAPIC", true, DefaultBase, DefaultBase | en, false, ModeXAPIC},
		{"EXTD without EN", true, DefaultBase | en, DefaultBase | extd, true, ModeXAPIC},
		{"reserved bit 0", true, DefaultBase | en, DefaultBase | en | 1, true, ModeXAPIC},
		{"reserved bit 9", true, DefaultBase | en, DefaultBase | en | 1<<9, true, ModeXAPIC},
		{"above MAXPHYADDR", true, DefaultBase | en, DefaultBase | en | 1<<52, true, ModeXAPIC},
		{"BSP bit", true, DefaultBase | en, DefaultBase | en | BaseBSP, false, ModeXAPIC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBus(2, &fakeClock{}, nil, Options{X2APIC: tc.x2})
			a := b.LAPIC(1)
			if tc.from&en == 0 {
				must(t, a.SetBase(tc.from))
			} else if tc.from&extd != 0 {
				must(t, a.SetBase(tc.from))
			}
			err := a.SetBase(tc.to)
			if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrGP)) {
				t.Fatalf("SetBase(%#x) = %v", tc.to, err)
			}
			if a.Mode() != tc.mode {
				t.Fatalf("mode %d, want %d", a.Mode(), tc.mode)
			}
			if !tc.err && a.Base() != tc.to {
				t.Fatalf("base %#x", a.Base())
			}
			if v, err := a.ReadMSR(MSRAPICBase); err != nil || v != a.Base() {
				t.Fatalf("APIC_BASE MSR %#x %v", v, err)
			}
			// PageBase's lock-free mirror follows base and mode.
			if addr, ok := a.PageBase(); ok != (a.Mode() == ModeXAPIC) || ok && addr != a.Base()&^0xFFF {
				t.Fatalf("PageBase %#x %v with base %#x, mode %d", addr, ok, a.Base(), a.Mode())
			}
			// ...and a restore's.
			c := NewBus(2, &fakeClock{}, nil, Options{X2APIC: tc.x2})
			must(t, c.LAPIC(1).Restore(a.Save()))
			if addr, ok := c.LAPIC(1).PageBase(); ok != (a.Mode() == ModeXAPIC) || ok && addr != a.Base()&^0xFFF {
				t.Fatalf("restored PageBase %#x %v with base %#x, mode %d", addr, ok, a.Base(), a.Mode())
			}
		})
	}

	// The relocated page; disabled reads all-ones and drops writes.
	b := newBus(t, 2, false)
	a := b.LAPIC(1)
	wr(t, a, RegTPR, 0x40)
	wr(t, a, RegLVTTimer, 0x30)
	b.Deliver(fixed(0x80, Physical, 1))
	must(t, a.SetBase(0xFED40000|BaseEN))
	if addr, ok := a.PageBase(); addr != 0xFED40000 || !ok {
		t.Fatalf("page %#x %v", addr, ok)
	}
	must(t, a.SetBase(0xFED40000))
	if _, ok := a.PageBase(); ok {
		t.Fatal("page present while disabled")
	}
	if got := rd(t, a, RegVersion); got != 0xFFFFFFFF {
		t.Fatalf("disabled page reads %#x", got)
	}
	wr(t, a, RegTPR, 0x10)
	// Re-enabling finds the power-on state (the disable reset it).
	must(t, a.SetBase(DefaultBase|BaseEN))
	s := a.Snapshot()
	if s.TPR != 0 || s.IRR != [8]uint32{} || s.LVT.Timer != lvtMasked || s.SVR != 0xFF || s.ID != 1 {
		t.Fatalf("after disable/enable: %+v", s)
	}
	// x2APIC keeps registers; the page is gone.
	wr(t, a, RegSVR, 0x1FF)
	wr(t, a, RegTPR, 0x40)
	must(t, a.SetBase(DefaultBase|BaseEN|BaseEXTD))
	if rd(t, a, RegTPR) != 0x40 || rd(t, a, RegSVR) != 0x1FF {
		t.Fatal("x2APIC switch lost registers")
	}
	if _, ok := a.PageBase(); ok {
		t.Fatal("page present in x2APIC mode")
	}
	var d [4]byte
	a.ReadMMIO(0x80, d[:])
	if d != [4]byte{0xFF, 0xFF, 0xFF, 0xFF} {
		t.Fatalf("MMIO in x2APIC mode reads %x", d)
	}
}

func TestMMIOAccessSizes(t *testing.T) {
	b := newBus(t, 1, false)
	a := b.LAPIC(0)
	wr(t, a, RegLVTLINT0, 0x1A7FE)
	for _, tc := range []struct {
		off  uint64
		n    int
		want []byte
	}{
		{0x350, 4, []byte{0xFE, 0xA7, 0x01, 0x00}},
		{0x351, 1, []byte{0xA7}},
		{0x352, 2, []byte{0x01, 0x00}},
		{0x351, 2, []byte{0xA7, 0x01}},
		{0x353, 2, []byte{0, 0}},       // straddles the register: zeros
		{0x354, 4, []byte{0, 0, 0, 0}}, // reserved part of the 16 bytes
		{0x350, 8, make([]byte, 8)},
		{0x0B0, 4, []byte{0, 0, 0, 0}}, // EOI is write-only
		{0x400, 4, []byte{0, 0, 0, 0}},
	} {
		d := make([]byte, tc.n)
		for i := range d {
			d[i] = 0x5A
		}
		a.ReadMMIO(tc.off, d)
		if !slices.Equal(d, tc.want) {
			t.Errorf("read %#x/%d = %x, want %x", tc.off, tc.n, d, tc.want)
		}
	}
	// Only aligned 4-byte writes count.
	a.WriteMMIO(0x80, []byte{0x70})
	a.WriteMMIO(0x84, []byte{0x70, 0, 0, 0})
	a.WriteMMIO(0x80, []byte{0x70, 0, 0, 0, 0, 0, 0, 0})
	if got := rd(t, a, RegTPR); got != 0 {
		t.Fatalf("odd write changed TPR to %#x", got)
	}
	// xAPIC ICR: delivery status reads idle; ICR2 keeps bits 31:24.
	wr(t, a, RegICR2, 0x12345678)
	wr(t, a, RegICR, 0x1040|icrBusy)
	if rd(t, a, RegICR)&icrBusy != 0 || rd(t, a, RegICR2) != 0x12000000 {
		t.Fatalf("ICR %#x ICR2 %#x", rd(t, a, RegICR), rd(t, a, RegICR2))
	}
}

func TestDecodeICR(t *testing.T) {
	m := DecodeICR(0xAB00_0000_000C_CD45, false)
	want := Message{Vector: 0x45, Delivery: INIT, DestMode: Logical, Assert: true, Trigger: Level,
		Shorthand: AllExcludingSelf, Dest: 0xAB, Source: -1}
	if m != want {
		t.Fatalf("xAPIC: %+v", m)
	}
	m = DecodeICR(0x1234_5678_0000_0645, true)
	if m.Dest != 0x12345678 || m.Delivery != StartUp || m.Vector != 0x45 || m.Shorthand != NoShorthand {
		t.Fatalf("x2APIC: %+v", m)
	}
	for _, x2 := range []bool{false, true} {
		if got := DecodeICR(EncodeICR(want, x2), x2); got != want {
			t.Fatalf("round trip x2=%v: %+v", x2, got)
		}
	}
}

// APIC_BASE bits at and above the guest's MAXPHYADDR are reserved (#GP),
// not only those above 52.
func TestBaseReservedAboveMaxPhysAddr(t *testing.T) {
	b := NewBus(1, nil, nil, Options{X2APIC: true, PhysAddrBits: 39})
	a := b.LAPIC(0)
	if err := a.SetBase(1<<39 | 0xFEE00000 | BaseEN); err != ErrGP {
		t.Errorf("bit 39 with MAXPHYADDR 39: %v, want #GP", err)
	}
	if err := a.SetBase(1<<38 | 0xFEE00000 | BaseEN); err != nil {
		t.Errorf("bit 38 with MAXPHYADDR 39: %v", err)
	}
	wide := NewBus(1, nil, nil, Options{}).LAPIC(0)
	if err := wide.SetBase(1<<51 | 0xFEE00000 | BaseEN); err != nil {
		t.Errorf("bit 51 with MAXPHYADDR unset (52): %v", err)
	}
}
