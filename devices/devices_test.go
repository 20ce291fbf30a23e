package devices

import (
	"bytes"
	"strings"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
)

func TestFwCfg(t *testing.T) {
	f := NewFwCfg(64, 128<<20)
	read := func(key uint16, n int) []byte {
		f.Out(0, 0x510, []byte{byte(key), byte(key >> 8)})
		out := make([]byte, n)
		for i := range out {
			b := []byte{0}
			f.In(0, 0x511, b)
			out[i] = b[0]
		}
		return out
	}
	if got := read(FwCfgSignature, 4); string(got) != "QEMU" {
		t.Errorf("signature %q", got)
	}
	if got := read(FwCfgNBCPUs, 2); got[0] != 64 || got[1] != 0 {
		t.Errorf("CPU count % x", got)
	}
	if got := read(FwCfgRAMSize, 8); got[3] != 0x08 {
		t.Errorf("RAM size % x", got)
	}
	if got := read(0x1234, 2); got[0] != 0 || got[1] != 0 {
		t.Errorf("unknown key reads % x", got)
	}
	if got := read(FwCfgFileDir, 4); string(got) != "\x00\x00\x00\x00" {
		t.Errorf("empty file directory % x", got)
	}
	key, err := f.AddFile("etc/govmm/busmap", []byte("map!"))
	if err != nil || key != FwCfgFileFirst {
		t.Fatalf("AddFile: key %#x, %v", key, err)
	}
	if _, err := f.AddFile("etc/govmm/busmap", nil); err == nil {
		t.Error("a file added twice")
	}
	if _, err := f.AddFile(strings.Repeat("x", 56), nil); err == nil {
		t.Error("a 56-byte name accepted")
	}
	dir := read(FwCfgFileDir, 4+64)
	// Big-endian count 1, size 4, key 0x20, then the name.
	if string(dir[:10]) != "\x00\x00\x00\x01\x00\x00\x00\x04\x00\x20" || !strings.HasPrefix(string(dir[12:]), "etc/govmm/busmap\x00") {
		t.Errorf("file directory % x", dir)
	}
	if got := read(key, 4); string(got) != "map!" {
		t.Errorf("file reads %q", got)
	}
}

func TestSerialAndBus(t *testing.T) {
	var out bytes.Buffer
	var b exitbus.Bus
	reg := func(base, n uint64, name string, c exitcause.Cause, dev PortDevice) {
		if err := b.Register(exitbus.Range{Space: exitbus.PIO, Base: base, Len: n, Name: name, Cause: exitbus.Fixed(c), Handler: Port(dev)}); err != nil {
			t.Fatal(err)
		}
	}
	reg(0x3F8, 8, "serial", exitcause.PIOSerial, NewSerial(&out))
	status := -1
	reg(0xF4, 4, "debug exit", exitcause.PIODebugExit, &DebugExit{Exit: func(s int) { status = s }})
	access := func(port uint64, write bool, data []byte) {
		t.Helper()
		r, base := b.Lookup(0, exitbus.PIO, port)
		if r == nil {
			t.Fatalf("port %#x unclaimed", port)
		}
		var a exitbus.Access
		a.Reset(0, port, base, write, nil)
		a.Data = data
		if err := r.Handler.Access(&a); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := b.Lookup(0, exitbus.PIO, 0x3FD); r == nil {
		t.Fatal("0x3fd unclaimed")
	} else if c, _ := r.Cause.Of(5, false); c != exitcause.PIOSerial {
		t.Fatalf("0x3fd: cause %v", c)
	}
	lsr := []byte{0}
	access(0x3FD, false, lsr)
	if lsr[0]&lsrTHRE == 0 {
		t.Error("LSR does not report THR empty")
	}
	access(0x3F8, true, []byte{'x'})
	if out.String() != "x" {
		t.Errorf("serial wrote %q", out.String())
	}
	if r, _ := b.Lookup(0, exitbus.PIO, 0x400); r != nil {
		t.Error("unclaimed port claimed")
	}
	access(0xF4, true, []byte{3, 0, 0, 0})
	if status != 7 {
		t.Errorf("debug exit status %d, want 7", status)
	}
}

// TestSerialTHREInterrupt: the line rises when THRE interrupts are enabled
// (and OUT2 set), falls when IIR is read, and rises again after a write.
func TestSerialTHREInterrupt(t *testing.T) {
	var out bytes.Buffer
	s := NewSerial(&out)
	var levels []bool
	s.IRQ = func(l bool) { levels = append(levels, l) }
	s.Out(0, 0x3FC, []byte{mcrOUT2})
	s.Out(0, 0x3F9, []byte{ierTHRE})
	iir := []byte{0}
	s.In(0, 0x3FA, iir)
	if iir[0] != iirTHRE {
		t.Fatalf("IIR %#x, want THRE", iir[0])
	}
	s.In(0, 0x3FA, iir)
	if iir[0] != iirNone {
		t.Fatalf("IIR after acknowledge %#x", iir[0])
	}
	s.Out(0, 0x3F8, []byte{'a'})
	want := []bool{true, false, true}
	if len(levels) != len(want) {
		t.Fatalf("line levels %v, want %v", levels, want)
	}
	for i := range want {
		if levels[i] != want[i] {
			t.Fatalf("line levels %v, want %v", levels, want)
		}
	}
}

func TestACPIPMPowerOff(t *testing.T) {
	var off, reset int
	p := &ACPIPM{EvtPort: 0x600, CntPort: 0x604, ResetPort: 0xCF9, ResetValue: 6,
		PowerOff: func() { off++ }, Reset: func() { reset++ }}
	p.Out(0, 0x604, []byte{0x00, 0x14}) // SLP_TYP=5 without SLP_EN: nothing yet
	if off != 0 {
		t.Fatal("powered off without SLP_EN")
	}
	p.Out(0, 0x604, []byte{0x00, 0x34})
	if off != 1 {
		t.Fatal("SLP_EN with SLP_TYP 5 did not power off")
	}
	p.Out(0, 0x604, []byte{0x00, 0x24}) // SLP_TYP 1 (not S5)
	if off != 1 {
		t.Fatal("a sleep state other than S5 powered off")
	}
	p.Out(0, 0xCF9, []byte{6})
	if reset != 1 {
		t.Fatal("reset register ignored")
	}
	b := []byte{0, 0}
	p.In(0, 0x604, b)
	if b[0]&1 == 0 {
		t.Error("SCI_EN does not read as set")
	}
}

// TestMarkerReadBack: each read port returns its own count of the last
// section, saturated to 32 bits.
func TestMarkerReadBack(t *testing.T) {
	m := NewMarker(4, func(int, int) {}, func(cpu int) SectionCounts {
		return SectionCounts{All: 100, Own: uint64(cpu), IPIsDelivered: 1 << 40, IPIsSent: 7, DeviceIRQExits: 9}
	}, nil, nil)
	for port, want := range map[uint16]uint32{0x660: 100, 0x664: 3, 0x668: 0xFFFFFFFF, 0x66C: 7, 0x670: 0, 0x674: 9} {
		if got := markerIn(m, 3, port); got != want {
			t.Errorf("IN %#x = %d, want %d", port, got, want)
		}
	}
}

// TestMarkerInjected: 0x670 reads the injections of the vector the reading
// vCPU selected (its own selection, not another vCPU's), low 32 bits.
func TestMarkerInjected(t *testing.T) {
	m := NewMarker(2, func(int, int) {}, nil, func(cpu int, vector uint8) uint64 {
		return 1<<32 | uint64(cpu)<<8 | uint64(vector)
	}, nil)
	m.Out(0, 0x670, []byte{0xfc, 0, 0, 0})
	m.Out(1, 0x670, []byte{0xfb, 0, 0, 0})
	if got := markerIn(m, 0, 0x670); got != 0x0fc {
		t.Errorf("vCPU 0 reads %#x, want 0xfc (its vector, 32 bits)", got)
	}
	if got := markerIn(m, 1, 0x670); got != 0x1fb {
		t.Errorf("vCPU 1 reads %#x, want 0x1fb", got)
	}
	// A vCPU the marker was not sized for reads zero and selects nothing.
	m.Out(5, 0x670, []byte{1, 0, 0, 0})
	if got := markerIn(m, 5, 0x670); got != 0 {
		t.Errorf("vCPU 5 of 2 reads %#x, want 0", got)
	}
	if got := markerIn(m, 0, 0x660); got != 0 {
		t.Errorf("IN 0x660 without section counts reads %d, want 0", got)
	}
}

// TestMarkerHalted: 0x678 answers whether the vCPU the reader selected is
// halted in govmm; each reader has its own selection, and a selection
// past the last vCPU reads 0.
func TestMarkerHalted(t *testing.T) {
	halted := map[int]bool{2: true}
	m := NewMarker(3, func(int, int) {}, nil, nil, func(cpu int) bool { return halted[cpu] })
	m.Out(0, 0x678, []byte{2, 0, 0, 0})
	m.Out(1, 0x678, []byte{1, 0, 0, 0})
	if got := markerIn(m, 0, 0x678); got != 1 {
		t.Errorf("vCPU 0 asks about halted vCPU 2: %d, want 1", got)
	}
	if got := markerIn(m, 1, 0x678); got != 0 {
		t.Errorf("vCPU 1 asks about running vCPU 1: %d, want 0", got)
	}
	halted[1] = true
	if got := markerIn(m, 1, 0x678); got != 1 {
		t.Errorf("vCPU 1 asks again once it halted: %d, want 1", got)
	}
	m.Out(0, 0x678, []byte{3, 0, 0, 0})
	if got := markerIn(m, 0, 0x678); got != 0 {
		t.Errorf("vCPU 3 of 3: %d, want 0", got)
	}
	if got := markerIn(NewMarker(1, func(int, int) {}, nil, nil, nil), 0, 0x678); got != 0 {
		t.Errorf("no Halted: %d, want 0", got)
	}
}

func markerIn(m *Marker, cpu int, port uint16) uint32 {
	b := make([]byte, 4)
	m.In(cpu, port, b)
	return le(b)
}

func TestPMTimerCounts(t *testing.T) {
	now := int64(0)
	p := &PMTimer{Now: func() int64 { return now }}
	read := func() uint32 {
		b := make([]byte, 4)
		p.In(0, 0x608, b)
		return le(b)
	}
	now = 1e9
	if got := read(); got != PMTimerHz {
		t.Errorf("after 1 s: %d ticks, want %d", got, PMTimerHz)
	}
	now = 100e6
	if got := read(); got != PMTimerHz/10 {
		t.Errorf("after 100 ms: %d ticks, want %d", got, PMTimerHz/10)
	}
	now = 3600e9 // the 32-bit counter wraps after 20 minutes
	if got, want := read(), uint32(uint64(3600)*PMTimerHz%(1<<32)); got != want {
		t.Errorf("after 1 h: %d, want %d (wrapped)", got, want)
	}
}

// TestFwCfgSaveRestore: a snapshot taken between a guest's select and its
// reads goes on with the same item at the same byte in a new fw_cfg;
// nothing selected stays nothing selected; a position past the item is
// refused.
func TestFwCfgSaveRestore(t *testing.T) {
	f := NewFwCfg(3, 64<<20)
	f.Out(0, 0x510, []byte{FwCfgNBCPUs, 0})
	b := []byte{0}
	f.In(0, 0x511, b)
	if b[0] != 3 {
		t.Fatalf("first byte of the CPU count %d, want 3", b[0])
	}
	g := NewFwCfg(3, 64<<20)
	if err := g.Restore(f.Save()); err != nil {
		t.Fatal(err)
	}
	g.In(0, 0x511, b)
	if b[0] != 0 {
		t.Errorf("second byte of the CPU count after restore %d, want 0", b[0])
	}
	h := NewFwCfg(3, 64<<20)
	if err := h.Restore(g.Save()); err != nil {
		t.Fatal(err)
	}
	h.In(0, 0x511, b) // past the item: zero
	if s := h.Save(); !s.Selected || s.Key != FwCfgNBCPUs || s.Pos != 2 {
		t.Errorf("saved %+v, want the CPU count selected, read to its end", s)
	}
	fresh := NewFwCfg(5, 64<<20)
	fresh.Out(0, 0x510, []byte{FwCfgNBCPUs, 0})
	if err := fresh.Restore(NewFwCfg(5, 64<<20).Save()); err != nil {
		t.Fatal(err)
	}
	fresh.In(0, 0x511, b)
	if b[0] != 0 {
		t.Errorf("nothing selected in the snapshot, read %d, want 0", b[0])
	}
	if err := fresh.Restore(FwCfgSaved{Selected: true, Key: FwCfgNBCPUs, Pos: 3}); err == nil {
		t.Error("a read position past the item accepted")
	}
}
