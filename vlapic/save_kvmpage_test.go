package vlapic

import (
	"encoding/binary"
	"testing"
)

// TestKVMPageRoundTrip: a LAPIC with vectors requested and in service, a
// level-triggered one, a TPR, an error and a periodic timer half-way goes
// through KVM's register page and back to the same state (but what the
// page has no place for: the latched NMI, which KVM holds in its vCPU
// events, and the tie-break count); its timer then fires at the time that
// remained.
func TestKVMPageRoundTrip(t *testing.T) {
	b, a := timerBus(t)
	wr(t, a, RegTPR, 0x20)
	wr(t, a, RegLVTTimer, 0x31|1<<17) // periodic
	wr(t, a, RegTimerDCR, 0x1)        // divide by 4: 1 count = 4 ns
	wr(t, a, RegTimerICR, 250_000)    // 1 ms
	b.Deliver(Message{Vector: 0x50, Source: -1})
	a.Acknowledge()
	b.Deliver(Message{Vector: 0x40, Source: -1})
	b.Deliver(Message{Vector: 0x60, Trigger: Level, Assert: true, Source: -1})
	wr(t, a, RegLVTError, 0x3F)
	wr(t, a, RegESR, 0) // the error into ESR
	b.clock.advance(400_001)
	saved := a.Save()
	page := saved.KVMPage(0)
	reg := func(off int) uint32 { return binary.LittleEndian.Uint32(page[off:]) }
	if got := reg(pageTMCCT); got != 150_000 {
		t.Errorf("TMCCT %d, want 150000 (599,999 ns left, rounded up to whole counts of 4 ns)", got)
	}
	if reg(pageISR+0x10*2)&(1<<16) == 0 || reg(pageIRR+0x10*3)&1 == 0 || reg(pageTMR+0x10*3)&1 == 0 {
		t.Errorf("vector 0x50 not in ISR, or 0x60 not in IRR and TMR")
	}
	back, err := SavedFromKVMPage(page, saved.Base)
	if err != nil {
		t.Fatal(err)
	}
	want := saved
	want.Events, want.LPWins, want.ESRAcc = Events{}, 0, 0
	want.Timer.RemainingNS = 600_000
	if back != want {
		t.Errorf("through KVM's page:\n%+v\nwant\n%+v", back, want)
	}
	b2, a2 := timerBus(t)
	if err := a2.Restore(back); err != nil {
		t.Fatal(err)
	}
	b2.sink.take() // the vectors restored in IRR
	b2.drain()
	b2.clock.advance(599_999)
	a2.Tick()
	expectFire(t, b2, 0x31, false)
	b2.clock.advance(1)
	a2.Tick()
	expectFire(t, b2, 0x31, true)
}

// TestKVMPageTimer: a one-shot timer that has fired goes to KVM with a
// zero initial count (KVM would fire a one-shot with TMCCT 0 once more);
// an armed one-shot keeps its initial count and its time left; a
// TSC-deadline timer leaves the counters zero (its deadline is an MSR's);
// x2APIC mode puts the whole ID in the ID register, xAPIC mode the xAPIC
// ID in bits 31:24.
func TestKVMPageTimer(t *testing.T) {
	s := Saved{Base: 0xFEE00000 | BaseEN, Mode: ModeXAPIC, XID: 3, DFR: 0xFFFFFFFF}
	s.Timer = SavedTimer{Initial: 1000, DCR: 0xB}
	p := s.KVMPage(7)
	reg := func(p []byte, off int) uint32 { return binary.LittleEndian.Uint32(p[off:]) }
	if reg(p, pageTMICT) != 0 || reg(p, pageTMCCT) != 0 || reg(p, pageID) != 3<<24 {
		t.Errorf("fired one-shot: TMICT %d TMCCT %d ID %#x, want 0, 0, 0x3000000", reg(p, pageTMICT), reg(p, pageTMCCT), reg(p, pageID))
	}
	s.Timer.Armed, s.Timer.RemainingNS = true, 400
	p = s.KVMPage(7)
	if reg(p, pageTMICT) != 1000 || reg(p, pageTMCCT) != 400 {
		t.Errorf("armed one-shot: TMICT %d TMCCT %d, want 1000, 400", reg(p, pageTMICT), reg(p, pageTMCCT))
	}
	if back, err := SavedFromKVMPage(p, s.Base); err != nil || back.Timer != s.Timer || back.XID != 3 || back.Mode != ModeXAPIC {
		t.Errorf("back from the page: %+v, %v", back, err)
	}
	s.LVT[lvtTimer] = 0x40 | 2<<17
	s.Timer = SavedTimer{Armed: true, TSCDeadline: 1 << 40, RemainingNS: 5000}
	s.Base |= BaseEXTD
	s.Mode = ModeX2APIC
	p = s.KVMPage(7)
	if reg(p, pageTMICT) != 0 || reg(p, pageTMCCT) != 0 || reg(p, pageID) != 7 {
		t.Errorf("TSC-deadline in x2APIC mode: TMICT %d TMCCT %d ID %d, want 0, 0, 7", reg(p, pageTMICT), reg(p, pageTMCCT), reg(p, pageID))
	}
	if back, err := SavedFromKVMPage(p, s.Base); err != nil || back.Timer.Armed || back.XID != 7 {
		t.Errorf("TSC-deadline back from the page: %+v, %v (the deadline is the caller's to set)", back, err)
	}
	if _, err := SavedFromKVMPage(p[:100], s.Base); err == nil {
		t.Errorf("a short page: no error")
	}
}

// TestStateFromKVMPage: the dumps' decoder reads what KVMPage wrote, each
// register from its own offset.
func TestStateFromKVMPage(t *testing.T) {
	s := Saved{Base: 0xFEE00000 | BaseEN, Mode: ModeXAPIC, XID: 5, LDR: 0x1000000, DFR: 0xFFFFFFFF, SVR: 0x1FF, TPR: 0x20,
		ESR: 0x40, ICR: 0x300000000004041, LVT: [nLVT]uint32{0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37},
		Timer: SavedTimer{Initial: 1000, DCR: 0xB, Armed: true, RemainingNS: 400}}
	s.IRR[1], s.ISR[2], s.TMR[3] = 1, 2, 4
	got := StateFromPage(s.KVMPage(0), s.Base)
	want := LVTs{Timer: 0x31, Thermal: 0x32, Perf: 0x33, LINT0: 0x34, LINT1: 0x35, Error: 0x36, CMCI: 0x37}
	if got.ID != 5 || got.LDR != s.LDR || got.DFR != s.DFR || got.SVR != s.SVR || got.TPR != s.TPR || got.ESR != s.ESR ||
		got.ICR != s.ICR || got.LVT != want || got.IRR != s.IRR || got.ISR != s.ISR || got.TMR != s.TMR ||
		got.Timer.Initial != 1000 || got.Timer.Current != 400 || got.Timer.DCR != 0xB {
		t.Errorf("StateFromPage(KVMPage) = %+v, from %+v", got, s)
	}
}
