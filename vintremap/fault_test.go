package vintremap

import (
	"testing"
)

// faultRig is a unit in Linux's state with the fault event unmasked.
func faultRig(t *testing.T) *rig {
	r := newRig(t, Options{EIM: true})
	r.linux(false)
	r.w32(RegFEDATA, 0x4F)
	r.w32(RegFEADDR, 0xFEE00000)
	r.w32(RegFEUADDR, 0x100) // x2APIC destination bits 31:8
	r.w32(RegFECTL, 0)
	return r
}

// readFR reads fault record i as Linux's dmar_fault does.
func (r *rig) readFR(i int) (f Fault, pending bool) {
	off := uint64(RegFR + 16*i)
	hi := r.r32(off + 12)
	return Fault{
		Reason: uint8(hi),
		SID:    uint16(r.r32(off + 8)),
		Index:  uint16(r.r64(off) >> 48),
	}, hi&(1<<31) != 0
}

// clearFR is writel(DMA_FRCD_F, reg + 12).
func (r *rig) clearFR(i int) { r.w32(uint64(RegFR+16*i+12), 1<<31) }

func TestFaultReasons(t *testing.T) {
	const sid = 0x0318 // 03:03.0
	ok := irte{p: true, vector: 0x40, dst: 1 << 8}
	cases := []struct {
		name   string
		lo, hi uint64 // raw IRTE, or
		e      *irte
		index  uint32
		reason uint8
	}{
		{name: "not present", e: &irte{vector: 0x40}, index: 1, reason: ReasonNotPresent},
		{name: "reserved 14:12", lo: 1 | 1<<12, index: 2, reason: ReasonIRTEReserved},
		{name: "reserved 31:24", lo: 1 | 1<<24, index: 3, reason: ReasonIRTEReserved},
		{name: "posted (IM)", lo: 1 | 1<<15, index: 4, reason: ReasonIRTEReserved},
		{name: "xapic dest 39:32", lo: 1 | 1<<32, index: 5, reason: ReasonIRTEReserved},
		{name: "xapic dest 63:48", lo: 1 | 1<<48, index: 6, reason: ReasonIRTEReserved},
		{name: "reserved 127:84", lo: 1, hi: 1 << (84 - 64), index: 7, reason: ReasonIRTEReserved},
		{name: "delivery mode 3", lo: 1 | 3<<5, index: 8, reason: ReasonIRTEReserved},
		{name: "SVT 3", lo: 1, hi: 3 << 18, index: 9, reason: ReasonSourceID},
		{name: "SID mismatch", e: &irte{p: true, svt: svtSID, sid: 0x0319}, index: 10, reason: ReasonSourceID},
		{name: "SQ ignores fn bit 2 only", e: &irte{p: true, svt: svtSID, sq: 1, sid: 0x0319}, index: 11, reason: ReasonSourceID},
		{name: "SQ=1 match", e: &irte{p: true, svt: svtSID, sq: 1, sid: 0x031C}, index: 12},
		{name: "SQ=3 match", e: &irte{p: true, svt: svtSID, sq: 3, sid: 0x031F}, index: 13},
		{name: "bus below range", e: &irte{p: true, svt: svtBus, sid: 0x0405}, index: 14, reason: ReasonSourceID},
		{name: "bus in range", e: &irte{p: true, svt: svtBus, sid: 0x0205}, index: 15},
		{name: "exact SID", e: &irte{p: true, svt: svtSID, sid: sid}, index: 16},
		{name: "index beyond table", e: &ok, index: 70000, reason: ReasonIndexOverflow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := faultRig(t)
			if c.index < 65536 {
				if c.e != nil {
					r.setIRTE(int(c.index), *c.e)
				} else {
					r.setRaw(int(c.index), c.lo, c.hi)
				}
			}
			addr, data := remappableMSI(c.index, false, 0)
			if c.index >= 65536 {
				addr, data = remappableMSI(0xFFFF, true, uint16(c.index-0xFFFF))
			}
			_, err := r.u.TranslateMSI(addr, data, sid)
			if c.reason == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantFault(t, err, c.reason)
			f, pending := r.readFR(0)
			if !pending || f.Reason != c.reason || f.SID != sid || f.Index != uint16(c.index) {
				t.Fatalf("FR0 %+v pending %v", f, pending)
			}
			if fsts := r.r32(RegFSTS); fsts != FSTSPPF {
				t.Fatalf("FSTS %#x", fsts)
			}
			if got := r.irq.take(); len(got) != 1 || got[0] != (msi{0x100_FEE00000, 0x4F}) {
				t.Fatalf("fault event %+v", got)
			}
		})
	}
}

func TestIRTAccessError(t *testing.T) {
	r := faultRig(t)
	r.w64(RegIRTA, 0x4000_0000|0xF) // beyond RAM
	r.command(gSIRTP, GSTSIRTPS, GSTSIRTPS)
	addr, data := remappableMSI(3, true, 0)
	_, err := r.u.TranslateMSI(addr, data, 0)
	wantFault(t, err, ReasonTableAccess)
}

func TestFPD(t *testing.T) {
	r := faultRig(t)
	r.setIRTE(1, irte{fpd: true})                                  // not present
	r.setRaw(2, 1|1<<1|1<<12, 0)                                   // reserved
	r.setIRTE(3, irte{p: true, fpd: true, svt: svtSID, sid: 0x99}) // SID
	for i := uint32(1); i <= 3; i++ {
		addr, data := remappableMSI(i, false, 0)
		if _, err := r.u.TranslateMSI(addr, data, 0x10); err == nil {
			t.Fatalf("index %d translated", i)
		}
	}
	if _, p := r.readFR(0); p || r.r32(RegFSTS) != 0 || len(r.irq.take()) != 0 {
		t.Fatal("FPD fault recorded")
	}
	c := r.u.Snapshot().Counters
	if c.FaultsSuppressed != 3 || c.Faults[ReasonNotPresent-0x20] != 1 || c.Faults[ReasonSourceID-0x20] != 1 {
		t.Fatalf("counters %+v", c)
	}
	// FPD does not cover faults found before the IRTE: index overflow.
	r.setTable(false)
	addr, data := remappableMSI(0xFFFF, true, 5)
	_, err := r.u.TranslateMSI(addr, data, 0)
	wantFault(t, err, ReasonIndexOverflow)
	if _, p := r.readFR(0); !p {
		t.Fatal("index overflow not recorded")
	}
}

func TestFaultOverflowAndEvents(t *testing.T) {
	r := faultRig(t)
	bad := func(i uint32) error {
		addr, data := remappableMSI(i, false, 0)
		_, err := r.u.TranslateMSI(addr, data, 0)
		return err
	}
	for i := range uint32(NumFR) {
		bad(i + 1)
	}
	// One event for the first fault: later ones find PPF already set.
	if got := r.irq.take(); len(got) != 1 {
		t.Fatalf("%d fault events, want 1", len(got))
	}
	if r.r32(RegFSTS) != FSTSPPF {
		t.Fatalf("FSTS %#x", r.r32(RegFSTS))
	}
	bad(50) // all four full: overflow
	if fsts := r.r32(RegFSTS); fsts != FSTSPPF|FSTSPFO {
		t.Fatalf("FSTS %#x, want PPF|PFO", fsts)
	}
	// Linux's dmar_fault: from FRI, read and clear each record, then clear
	// PFO|PPF in FSTS.
	fri := int(r.r32(RegFSTS) >> 8 & 0xFF)
	for i := range NumFR {
		f, p := r.readFR((fri + i) % NumFR)
		if !p || f.Index != uint16(i+1) {
			t.Fatalf("record %d: %+v %v", i, f, p)
		}
		r.clearFR((fri + i) % NumFR)
	}
	r.w32(RegFSTS, FSTSPFO|FSTSPPF)
	if fsts := r.r32(RegFSTS); fsts&(FSTSPFO|FSTSPPF) != 0 {
		t.Fatalf("FSTS %#x after service", fsts)
	}
	if c := r.u.Snapshot().Counters; c.FaultsLost != 1 {
		t.Fatalf("lost %d", c.FaultsLost)
	}
	// Masked: IP latches, no MSI; unmasking sends it.
	r.w32(RegFECTL, CtlIM)
	bad(60)
	if len(r.irq.take()) != 0 || r.r32(RegFECTL) != CtlIM|CtlIP {
		t.Fatalf("masked: FECTL %#x", r.r32(RegFECTL))
	}
	r.w32(RegFECTL, 0)
	if got := r.irq.take(); len(got) != 1 || r.r32(RegFECTL) != 0 {
		t.Fatalf("unmask: %v FECTL %#x", got, r.r32(RegFECTL))
	}
	// A masked event is dropped when software services the fault first.
	r.clearFR(0)
	r.w32(RegFECTL, CtlIM)
	for i := range NumFR {
		r.clearFR(i)
	}
	bad(61)
	if r.r32(RegFECTL)&CtlIP == 0 {
		t.Fatal("IP not set")
	}
	f, _ := r.readFR(1)
	if f.Index != 61 {
		t.Fatalf("next record %+v, want index 61 in FR1", f)
	}
	r.clearFR(1)
	r.w32(RegFSTS, FSTSPPF)
	if r.r32(RegFECTL)&CtlIP != 0 {
		t.Fatal("IP survives an empty FSTS")
	}
}

func TestFaultError(t *testing.T) {
	f := Fault{Reason: ReasonNotPresent, Index: 7, SID: 0x0318}
	if s := f.Error(); s != "vintremap: fault 0x22 (IRTE not present) at index 7 from 03:03.0" {
		t.Fatal(s)
	}
}
