package pci

import (
	"sync"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

type barChange struct {
	bar  int
	base uint64
	on   bool
}

func TestDecodeOnOff(t *testing.T) {
	r := newRig(t)
	var changes []barChange
	r.f.OnBARChange(func(bar int, base uint64, on bool) { changes = append(changes, barChange{bar, base, on}) })
	b0, _ := r.f.BARBase(0)
	b2, _ := r.f.BARBase(2)
	b4, _ := r.f.BARBase(4)
	r.r0.mem[0x3000] = 0x5A
	r.r2.mem[0x10] = 0x77

	if v, c := r.mmio(t, b0+0x3000, false, 1, 0); v != 0xFF || c != exitcause.PCIBAR {
		t.Errorf("BAR0 before decode: %#x charged %v", v, c)
	}
	r.cfgWrite(t, 1, regCommand, 2, CmdMemory)
	if v, c := r.mmio(t, b0+0x3000, false, 1, 0); v != 0x5A || c != exitcause.PCIBAR {
		t.Errorf("BAR0 decoding: %#x charged %v", v, c)
	}
	if v, c := r.mmio(t, b2+0x10, false, 4, 0); v != 0x77 || c != exitcause.VirtioConfig {
		t.Errorf("BAR2: %#x charged %v (want the BAR's own cause)", v, c)
	}
	r.mmio(t, b2+0x20, true, 8, 0x0102030405060708)
	if r.r2.mem[0x20] != 8 || r.r2.mem[0x27] != 1 {
		t.Errorf("BAR2 write: % x", r.r2.mem[0x20:0x28])
	}
	// I/O decode needs the I/O enable bit.
	io := func() byte {
		d := []byte{0}
		r.do(t, "pci io window", b4+3, false, d)
		return d[0]
	}
	r.r4.mem[3] = 0x33
	if got := io(); got != 0xFF {
		t.Errorf("I/O BAR decodes with I/O enable off: %#x", got)
	}
	r.cfgWrite(t, 1, regCommand, 2, CmdMemory|CmdIO)
	if got := io(); got != 0x33 {
		t.Errorf("I/O BAR read %#x", got)
	}
	want := []barChange{{0, b0, true}, {2, b2, true}, {4, b4, true}}
	if len(changes) != 3 || changes[0] != want[0] || changes[1] != want[1] || changes[2] != want[2] {
		t.Errorf("OnBARChange calls %+v, want %+v", changes, want)
	}
	// An access past the BAR's end, or between BARs: all ones.
	if v, _ := r.mmio(t, b0+0x3FFE, false, 4, 0); v != 0xFFFFFFFF {
		t.Errorf("access across BAR0's end reads %#x", v)
	}
	if v, c := r.mmio(t, testMMIOBase+testMMIOSize-4, false, 4, 0); v != 0xFFFFFFFF || c != exitcause.PCIBAR {
		t.Errorf("hole reads %#x charged %v", v, c)
	}
	r.mmio(t, testMMIOBase+testMMIOSize-4, true, 4, 0) // ignored

	// Moving BAR0 while decoding: one call with the new base.
	changes = nil
	nb := uint64(testMMIOBase + 0x100000)
	r.cfgWrite(t, 1, regBAR0, 4, uint32(nb))
	if base, on := r.f.BARBase(0); base != nb || !on {
		t.Errorf("BARBase(0) = %#x %v", base, on)
	}
	if v, _ := r.mmio(t, nb+0x3000, false, 1, 0); v != 0x5A {
		t.Errorf("moved BAR0 reads %#x", v)
	}
	if v, _ := r.mmio(t, b0+0x3000, false, 1, 0); v != 0xFF {
		t.Errorf("old BAR0 address still decodes: %#x", v)
	}
	// Memory decode off: BAR0 and BAR2 stop.
	r.cfgWrite(t, 1, regCommand, 2, CmdIO)
	want = []barChange{{0, nb, true}, {0, nb, false}, {2, b2, false}}
	if len(changes) != 3 || changes[0] != want[0] || changes[1] != want[1] || changes[2] != want[2] {
		t.Errorf("OnBARChange calls %+v, want %+v", changes, want)
	}
	if _, on := r.f.BARBase(2); on {
		t.Error("BAR2 decodes with memory off")
	}
	// Sizing with decode off makes no calls.
	changes = nil
	r.cfgWrite(t, 1, regBAR0, 4, 0xFFFFFFFF)
	r.cfgWrite(t, 1, regBAR0, 4, uint32(b0))
	if len(changes) != 0 {
		t.Errorf("sizing with decode off made calls %+v", changes)
	}
}

func TestDecodeOutsideWindowAndOverlap(t *testing.T) {
	r := newRig(t)
	r.enable(t)
	b0, _ := r.f.BARBase(0)
	b2, _ := r.f.BARBase(2)
	// Outside the window: does not decode.
	r.cfgWrite(t, 1, regBAR0, 4, 0x80000000)
	if base, on := r.f.BARBase(0); base != 0x80000000 || on {
		t.Errorf("BAR0 outside the window: %#x %v", base, on)
	}
	// A 64-bit BAR above 4 GiB is outside the window too.
	r.cfgWrite(t, 1, regBAR0+12, 4, 1)
	if base, on := r.f.BARBase(2); base != 1<<32|b2 || on {
		t.Errorf("BAR2 above 4 GiB: %#x %v", base, on)
	}
	r.cfgWrite(t, 1, regBAR0+12, 4, 0)
	// Overlap: BAR0 moved inside BAR2; neither decodes.
	r.cfgWrite(t, 1, regBAR0, 4, uint32(b2+0x4000))
	if _, on := r.f.BARBase(0); on {
		t.Error("overlapping BAR0 decodes")
	}
	if _, on := r.f.BARBase(2); on {
		t.Error("overlapped BAR2 decodes")
	}
	if v, _ := r.mmio(t, b2+0x4000, false, 4, 0); v != 0xFFFFFFFF {
		t.Errorf("overlap reads %#x", v)
	}
	r.cfgWrite(t, 1, regBAR0, 4, uint32(b0))
	if _, on := r.f.BARBase(0); !on {
		t.Error("BAR0 back in place does not decode")
	}
	if _, on := r.f.BARBase(2); !on {
		t.Error("BAR2 does not decode after the overlap ended")
	}
}

func TestDropOverlaps(t *testing.T) {
	w := func(b, e uint64) window { return window{base: b, end: e} }
	got := dropOverlaps([]window{w(30, 40), w(0, 10), w(5, 6), w(10, 20), w(35, 50), w(60, 70)})
	if len(got) != 2 || got[0].base != 10 || got[1].base != 60 {
		t.Errorf("dropOverlaps kept %+v, want [10,20) and [60,70)", got)
	}
}

// TestDecodeConcurrent moves a BAR on one goroutine while others access it:
// the lock-free lookup must stay race-free (run with -race).
func TestDecodeConcurrent(t *testing.T) {
	r := newRig(t)
	r.enable(t)
	b0, _ := r.f.BARBase(0)
	h := r.ranges["pci mmio window"].Handler
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var acc = r.acc
			for i := range 2000 {
				if g == 0 {
					d := []byte{0, 0, 0, 0}
					putN(d, b0+uint64(i%2)*0x100000)
					r.f.WriteConfig(regBAR0, d)
					continue
				}
				d := make([]byte, 4)
				acc.Reset(g, b0+0x3000, testMMIOBase, false, nil)
				acc.Data = d
				h.Access(&acc)
			}
		}()
	}
	wg.Wait()
}
