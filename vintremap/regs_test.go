package vintremap

import "testing"

func TestResetRegisters(t *testing.T) {
	for _, eim := range []bool{false, true} {
		r := newRig(t, Options{EIM: eim})
		if v := r.r32(RegVER); v != 0x10 {
			t.Errorf("VER %#x", v)
		}
		if v := r.r64(RegCAP); v != 0x0000_0300_2226_0002 {
			t.Errorf("CAP %#x", v)
		}
		wantECAP := uint64(0xF00F0B)
		if eim {
			wantECAP |= 1 << 4
		}
		if v := r.r64(RegECAP); v != wantECAP {
			t.Errorf("EIM=%v: ECAP %#x, want %#x", eim, v, wantECAP)
		}
		// Halves read like readl.
		if lo, hi := r.r32(RegCAP), r.r32(RegCAP+4); uint64(hi)<<32|uint64(lo) != CAP {
			t.Errorf("CAP halves %#x %#x", hi, lo)
		}
		if v := r.r32(RegFECTL); v != CtlIM {
			t.Errorf("FECTL %#x, want IM", v)
		}
		if v := r.r32(RegIECTL); v != CtlIM {
			t.Errorf("IECTL %#x, want IM", v)
		}
		for _, off := range []uint64{RegGSTS, RegGCMD, RegFSTS, 0x20, 0x28, 0x100, 0xFFC} {
			if v := r.r32(off); v != 0 {
				t.Errorf("reg %#x = %#x, want 0", off, v)
			}
		}
		if r.u.Enabled() {
			t.Error("enabled after reset")
		}
	}
}

func TestCapacityFitsLinuxMapping(t *testing.T) {
	// map_iommu: max(cap_max_fault_reg_offset, ecap_max_iotlb_offset) must
	// fit the register page, or Linux maps beyond it.
	fro := (CAP >> 24 & 0x3FF) * 16
	nfr := (CAP>>40&0xFF + 1)
	iro := (ECAP(Options{}) >> 8 & 0x3FF) * 16
	if fro != RegFR || nfr != NumFR || fro+16*nfr > Size || iro+16 > Size {
		t.Fatalf("FRO %#x NFR %d IRO %#x", fro, nfr, iro)
	}
	if CAP>>8&0x1F != 0 {
		t.Fatal("SAGAW advertises DMA translation")
	}
}

func TestOddAccessesIgnored(t *testing.T) {
	r := newRig(t, Options{})
	r.w32(RegFEDATA, 0x1234)
	// 2-byte, 1-byte, misaligned and out-of-page accesses.
	r.u.WriteMMIO(RegFEDATA, []byte{0xFF, 0xFF})
	r.u.WriteMMIO(RegFEDATA+1, []byte{1, 2, 3, 4})
	r.u.WriteMMIO(Size, []byte{1, 2, 3, 4})
	r.u.WriteMMIO(RegFEDATA, []byte{1, 2, 3, 4, 5, 6, 7, 8}) // 8 bytes at a 4-aligned offset
	if v := r.r32(RegFEDATA); v != 0x1234 {
		t.Fatalf("FEDATA %#x", v)
	}
	b := []byte{9, 9}
	r.u.ReadMMIO(RegFEDATA, b)
	if b[0] != 0 || b[1] != 0 {
		t.Fatalf("2-byte read %v", b)
	}
}

func TestLinuxEnableSequence(t *testing.T) {
	for _, eim := range []bool{false, true} {
		r := newRig(t, Options{EIM: eim})
		// dmar_enable_qi.
		r.enableQI()
		if s := r.u.Snapshot(); s.QueueAddr != iqAddr || s.QueueSize != 256 {
			t.Fatalf("queue %#x/%d", s.QueueAddr, s.QueueSize)
		}
		// iommu_set_irq_remapping: the table takes effect at SIRTP.
		r.setTable(eim)
		s := r.u.Snapshot()
		if s.Table != (Table{Addr: irtAddr, Entries: 65536, EIME: eim}) {
			t.Fatalf("table %+v", s.Table)
		}
		if s.Counters.IECInvalidations != 1 || s.Counters.WaitDescriptors != 1 {
			t.Fatalf("global IEC flush not seen: %+v", s.Counters)
		}
		// CFI on, then IRE: iommu_enable_irq_remapping turns CFI off again.
		r.gcmd |= gCFI
		r.command(0, GSTSCFIS, GSTSCFIS)
		r.enableIR()
		want := uint32(GSTSQIES | GSTSIRES | GSTSIRTPS)
		if g := r.r32(RegGSTS); g != want {
			t.Fatalf("GSTS %#x, want %#x", g, want)
		}
		if !r.u.Enabled() {
			t.Fatal("not enabled")
		}
		// Linux then unmasks the fault event (dmar_set_interrupt).
		r.w32(RegFEDATA, 0x41)
		r.w32(RegFEADDR, 0xFEE00000)
		r.w32(RegFECTL, 0)
		if v := r.r32(RegFECTL); v != 0 {
			t.Fatalf("FECTL %#x", v)
		}
	}
}

func TestEIMEOnlyWithEIM(t *testing.T) {
	r := newRig(t, Options{})
	r.w64(RegIRTA, irtAddr|1<<11|0x7F3)
	if v := r.r64(RegIRTA); v != irtAddr|3 {
		t.Fatalf("IRTA %#x: EIME or reserved bits kept", v)
	}
	r = newRig(t, Options{EIM: true})
	r.w64(RegIRTA, irtAddr|1<<11|3)
	if v := r.r64(RegIRTA); v != irtAddr|1<<11|3 {
		t.Fatalf("IRTA %#x", v)
	}
}

func TestIRTATakesEffectAtSIRTP(t *testing.T) {
	r := newRig(t, Options{})
	r.linux(false)
	r.setIRTE(5, irte{p: true, vector: 0x40, dst: 1 << 8})
	addr, data := remappableMSI(5, true, 0)
	if _, err := r.u.TranslateMSI(addr, data, 0); err != nil {
		t.Fatal(err)
	}
	r.w64(RegIRTA, 0x300000) // size field 0: two entries elsewhere, not yet latched
	if _, err := r.u.TranslateMSI(addr, data, 0); err != nil {
		t.Fatalf("IRTA change without SIRTP took effect: %v", err)
	}
	r.command(gSIRTP, GSTSIRTPS, GSTSIRTPS)
	_, err := r.u.TranslateMSI(addr, data, 0)
	wantFault(t, err, ReasonIndexOverflow)
}

func TestDisableQI(t *testing.T) {
	r := newRig(t, Options{})
	r.enableQI()
	r.submit([2]uint64{descIEC, 0})
	if r.r32(RegIQH) == 0 {
		t.Fatal("IQH did not move")
	}
	r.gcmd &^= gQIE
	r.command(0, GSTSQIES, 0)
	if h := r.r64(RegIQH); h != 0 {
		t.Fatalf("IQH %#x after disable, want 0", h)
	}
	// IQT writes with QI off only store the tail.
	r.w32(RegIQT, 3<<4)
	if r.r32(RegIQH) != 0 || r.r32(RegIQT) != 3<<4 {
		t.Fatal("queue ran while disabled")
	}
}

func TestDisableIRPassesCompatibility(t *testing.T) {
	r := newRig(t, Options{})
	r.linux(false)
	addr, data := uint64(0xFEE01000), uint32(0x4031)
	_, err := r.u.TranslateMSI(addr, data, 0)
	wantFault(t, err, ReasonCompatBlocked)
	r.gcmd &^= gIRE
	r.command(0, GSTSIRES, 0)
	if r.u.Enabled() {
		t.Fatal("still enabled")
	}
	m, err := r.u.TranslateMSI(addr, data, 0)
	if err != nil || m.Vector != 0x31 || m.Dest != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	if c := r.u.Snapshot().Counters; c.Passthrough != 1 || c.Faults[ReasonCompatBlocked-0x20] != 1 {
		t.Fatalf("counters %+v", c)
	}
}
