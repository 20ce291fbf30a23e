// Tests of the APIC timer on the fake clock: one-shot, periodic, divide
// configuration and TSC-deadline.

package vlapic

import (
	"slices"
	"testing"
)

// timerBus is one software-enabled xAPIC LAPIC on a fake clock.
func timerBus(t *testing.T) (*testBus, *LAPIC) {
	b := newBus(t, 1, false)
	return b, b.LAPIC(0)
}

func expectFire(t *testing.T, b *testBus, v uint8, fired bool) {
	t.Helper()
	got := b.withIRR(v) != nil
	if got != fired {
		t.Fatalf("at %d ns: fired %v, want %v", b.clock.Now(), got, fired)
	}
	if n := b.sink.take(); (len(n) > 0) != fired {
		t.Fatalf("at %d ns: notified %v", b.clock.Now(), n)
	}
	b.drain()
}

func TestTimerOneShot(t *testing.T) {
	b, a := timerBus(t)
	wr(t, a, RegLVTTimer, 0x30)
	wr(t, a, RegTimerDCR, 0xB) // divide by 1: 1 count = 1 ns at 1 GHz
	wr(t, a, RegTimerICR, 1000)
	if dl, ok := a.TimerDeadline(); !ok || dl != 1000 {
		t.Fatalf("deadline %d %v", dl, ok)
	}
	prev := rd(t, a, RegTimerCCR)
	for _, step := range []int64{100, 300, 599} {
		b.clock.advance(step)
		a.Tick()
		ccr := rd(t, a, RegTimerCCR)
		if ccr >= prev || ccr == 0 {
			t.Fatalf("CCR %d after %d (prev %d)", ccr, b.clock.Now(), prev)
		}
		prev = ccr
		expectFire(t, b, 0x30, false)
	}
	if prev != 1 {
		t.Fatalf("CCR 1 ns before expiry = %d", prev)
	}
	b.clock.advance(1)
	if rd(t, a, RegTimerCCR) != 0 {
		t.Fatal("CCR not 0 at expiry")
	}
	a.Tick()
	expectFire(t, b, 0x30, true)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("one-shot still armed")
	}
	b.clock.advance(10_000)
	a.Tick()
	expectFire(t, b, 0x30, false)
	if rd(t, a, RegTimerCCR) != 0 || rd(t, a, RegTimerICR) != 1000 {
		t.Fatal("CCR/ICR after one-shot")
	}
	// Writing 0 stops a running timer.
	wr(t, a, RegTimerICR, 500)
	wr(t, a, RegTimerICR, 0)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("ICR 0 did not stop the timer")
	}
	// A masked timer expires without an interrupt.
	wr(t, a, RegLVTTimer, 0x30|lvtMasked)
	wr(t, a, RegTimerICR, 10)
	b.clock.advance(10)
	a.Tick()
	expectFire(t, b, 0x30, false)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("masked one-shot still armed")
	}
}

func TestTimerPeriodic(t *testing.T) {
	b, a := timerBus(t)
	const ms = 1_000_000
	wr(t, a, RegLVTTimer, 1<<17|0x31)
	wr(t, a, RegTimerDCR, 0xB)
	wr(t, a, RegTimerICR, ms)
	for i := 1; i <= 3; i++ {
		b.clock.advance(ms)
		a.Tick()
		expectFire(t, b, 0x31, true)
		if dl, _ := a.TimerDeadline(); dl != int64(i+1)*ms {
			t.Fatalf("period %d: next deadline %d", i, dl)
		}
	}
	b.clock.advance(ms / 4)
	if got := rd(t, a, RegTimerCCR); got != 3*ms/4 {
		t.Fatalf("CCR %d", got)
	}
	// Late by 5.5 periods: one interrupt, next deadline on the grid.
	b.clock.advance(5*ms + ms/2) // now 8.75 ms
	if got := rd(t, a, RegTimerCCR); got != ms/4 {
		t.Fatalf("CCR when late %d, want wrap to %d", got, ms/4)
	}
	a.Tick()
	expectFire(t, b, 0x31, true)
	if dl, _ := a.TimerDeadline(); dl != 9*ms {
		t.Fatalf("catch-up deadline %d", dl)
	}
	a.Tick()
	expectFire(t, b, 0x31, false)
	// Tiny periods are clamped.
	wr(t, a, RegTimerICR, 10)
	if dl, _ := a.TimerDeadline(); dl != b.clock.Now()+minPeriodNS {
		t.Fatalf("clamped deadline %d at %d", dl, b.clock.Now())
	}
	// Switching to one-shot keeps it running; it then fires once.
	wr(t, a, RegTimerICR, ms)
	wr(t, a, RegLVTTimer, 0x31)
	b.clock.advance(ms)
	a.Tick()
	expectFire(t, b, 0x31, true)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("still armed after switching to one-shot")
	}
}

func TestTimerDivide(t *testing.T) {
	for dcr, div := range map[uint32]int64{0: 2, 1: 4, 2: 8, 3: 16, 8: 32, 9: 64, 0xA: 128, 0xB: 1, 0xF4: 2} {
		b, a := timerBus(t)
		wr(t, a, RegLVTTimer, 0x30)
		wr(t, a, RegTimerDCR, dcr)
		if got := rd(t, a, RegTimerDCR); got != dcr&0xB {
			t.Fatalf("DCR reads %#x", got)
		}
		wr(t, a, RegTimerICR, 1000)
		if dl, _ := a.TimerDeadline(); dl != 1000*div {
			t.Errorf("DCR %#x: deadline %d, want %d", dcr, dl, 1000*div)
		}
		b.clock.advance(10 * div)
		if got := rd(t, a, RegTimerCCR); got != 990 {
			t.Errorf("DCR %#x: CCR %d", dcr, got)
		}
	}
	// Changing the divider mid-count keeps the remaining counts.
	b, a := timerBus(t)
	wr(t, a, RegLVTTimer, 0x30)
	wr(t, a, RegTimerDCR, 0xB)
	wr(t, a, RegTimerICR, 1000)
	b.clock.advance(400)
	wr(t, a, RegTimerDCR, 0) // divide by 2
	if got := rd(t, a, RegTimerCCR); got != 600 {
		t.Fatalf("CCR after DCR change %d", got)
	}
	if dl, _ := a.TimerDeadline(); dl != 400+1200 {
		t.Fatalf("deadline after DCR change %d", dl)
	}
	// BusHz scales it.
	c := &fakeClock{}
	a2 := NewBus(1, c, nil, Options{BusHz: 100e6}).LAPIC(0)
	wr(t, a2, RegSVR, 0x1FF)
	wr(t, a2, RegLVTTimer, 0x30)
	wr(t, a2, RegTimerDCR, 0xB)
	wr(t, a2, RegTimerICR, 1000)
	if dl, _ := a2.TimerDeadline(); dl != 10_000 {
		t.Fatalf("100 MHz bus: deadline %d", dl)
	}
}

func TestTimerTSCDeadline(t *testing.T) {
	b, a := timerBus(t)
	tsc := func() uint64 { return b.clock.TSC() }
	wrDL := func(v uint64) {
		t.Helper()
		if _, err := a.WriteMSR(MSRTSCDeadline, v); err != nil {
			t.Fatal(err)
		}
	}
	rdDL := func() uint64 {
		v, err := a.ReadMSR(MSRTSCDeadline)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Not in TSC-deadline mode: writes ignored, reads 0.
	wr(t, a, RegLVTTimer, 0x32)
	wrDL(tsc() + 100)
	if rdDL() != 0 {
		t.Fatal("deadline MSR in one-shot mode")
	}
	wr(t, a, RegLVTTimer, 2<<17|0x32)
	wr(t, a, RegTimerICR, 1000) // ignored in TSC-deadline mode
	if rd(t, a, RegTimerICR) != 0 {
		t.Fatal("initial count written in TSC-deadline mode")
	}
	dl := tsc() + 500
	wrDL(dl)
	if rdDL() != dl {
		t.Fatalf("MSR reads %d", rdDL())
	}
	if ns, ok := a.TimerDeadline(); !ok || ns != b.clock.Now()+500 {
		t.Fatalf("deadline %d %v", ns, ok)
	}
	if rd(t, a, RegTimerCCR) != 0 {
		t.Fatal("CCR in TSC-deadline mode")
	}
	b.clock.advance(499)
	a.Tick()
	expectFire(t, b, 0x32, false)
	b.clock.advance(1)
	a.Tick()
	expectFire(t, b, 0x32, true)
	if rdDL() != 0 {
		t.Fatal("MSR not 0 after firing")
	}
	// A deadline in the past fires at once.
	wrDL(tsc() - 1)
	expectFire(t, b, 0x32, true)
	if _, ok := a.TimerDeadline(); ok || rdDL() != 0 {
		t.Fatal("past deadline left armed")
	}
	// 0 disarms.
	wrDL(tsc() + 100)
	wrDL(0)
	b.clock.advance(200)
	a.Tick()
	expectFire(t, b, 0x32, false)
	// Leaving TSC-deadline mode stops it.
	wrDL(tsc() + 100)
	wr(t, a, RegLVTTimer, 0x32)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("TSC deadline survived mode change")
	}
	// TSCHz scales the deadline; x2APIC mode works the same.
	c := &fakeClock{tscBase: 7}
	x := NewBus(1, c, nil, Options{TSCHz: 2e9, X2APIC: true}).LAPIC(0)
	must(t, x.SetBase(x.Base()|BaseEXTD))
	wr(t, x, RegSVR, 0x1FF)
	wr(t, x, RegLVTTimer, 2<<17|0x32)
	if _, err := x.WriteMSR(MSRTSCDeadline, c.TSC()+1000); err != nil {
		t.Fatal(err)
	}
	if ns, _ := x.TimerDeadline(); ns != 500 {
		t.Fatalf("2 GHz TSC: deadline %d", ns)
	}
	if s := x.Snapshot(); s.Timer.Mode != TimerTSCDeadline || !slices.Equal(s.IRR[:], make([]uint32, 8)) {
		t.Fatalf("snapshot %+v", s.Timer)
	}
}

// WriteTSCDeadline judges a deadline against the TSC its caller read (the
// vCPU's, as KVM has it), not the bus clock's: a deadline ahead of the
// guest's TSC arms for the difference even where the clock's TSC has passed
// it, and one at or behind the guest's TSC fires at once even where the
// clock's has not reached it.
func TestTSCDeadlineAgainstGuestTSC(t *testing.T) {
	b, a := timerBus(t)
	wr(t, a, RegLVTTimer, 2<<17|0x32)
	guest := b.clock.TSC() - 20_000_000 // the guest's TSC 20 ms behind the clock's
	a.WriteTSCDeadline(guest+4_000_000, guest)
	expectFire(t, b, 0x32, false)
	if ns, ok := a.TimerDeadline(); !ok || ns != b.clock.Now()+4_000_000 {
		t.Fatalf("deadline a tick ahead of the guest's TSC: %d %v, want armed at now+4ms", ns, ok)
	}
	b.clock.advance(4_000_000)
	a.Tick()
	expectFire(t, b, 0x32, true)
	ahead := b.clock.TSC() + 20_000_000 // the guest's TSC ahead of the clock's
	a.WriteTSCDeadline(ahead-1, ahead)
	expectFire(t, b, 0x32, true)
	if _, ok := a.TimerDeadline(); ok {
		t.Fatal("a deadline behind the guest's TSC left armed")
	}
}
