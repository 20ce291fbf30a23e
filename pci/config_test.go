package pci

import (
	"testing"

	"github.com/govmm/govmm/exitcause"
)

func TestAddress(t *testing.T) {
	a := Address{Bus: 0, Device: 3, Function: 1}
	if a.SourceID() != 0x19 || a.String() != "00:03.1" {
		t.Errorf("SourceID %#x String %q", a.SourceID(), a)
	}
	if (Address{Bus: 0x1a, Device: 5, Function: 3}).SourceID() != 0x1a2b {
		t.Error("SourceID of 1a:05.3")
	}
}

func TestHeader(t *testing.T) {
	r := newRig(t)
	if r.f.Address() != (Address{0, 1, 0}) {
		t.Fatalf("function at %v, want 00:01.0", r.f.Address())
	}
	for _, c := range []struct {
		dev     int
		reg     uint64
		n       int
		want    uint32
		comment string
	}{
		{0, 0, 4, 0x00081b36, "host bridge vendor/device"},
		{0, 8, 4, 0x06000000, "host bridge class"},
		{0, regStatus, 2, 0, "host bridge: no capabilities"},
		{0, regBAR0, 4, 0, "host bridge: no BARs"},
		{1, 0, 2, 0x1af4, "vendor"},
		{1, 2, 2, 0x1042, "device"},
		{1, 8, 4, 0x01000001, "class and revision"},
		{1, regSubsystem, 4, 0x00021af4, "subsystem"},
		{1, regHeader, 1, 0, "header type 0, single function"},
		{1, regStatus, 2, statusCapList, "status: capability list"},
		{1, regIntPin, 1, 0, "no INTx pin"},
		{1, 0x100, 4, 0, "extended config space reads 0"},
		{1, 0xFFC, 4, 0, "last dword of the 4 KiB"},
		{1, regCommand, 2, 0, "command starts 0"},
	} {
		if got := r.cfgRead(t, c.dev, c.reg, c.n); got != c.want {
			t.Errorf("%s: %02x:%#x/%d = %#x, want %#x", c.comment, c.dev, c.reg, c.n, got, c.want)
		}
	}
}

func TestReadOnlyAndMasks(t *testing.T) {
	r := newRig(t)
	for _, reg := range []uint64{0, 8, regSubsystem, regHeader &^ 3, regROM, regIntLine &^ 3} {
		r.cfgWrite(t, 1, reg, 4, 0xFFFFFFFF)
	}
	if got := r.cfgRead(t, 1, 0, 4); got != 0x10421af4 {
		t.Errorf("IDs changed to %#x", got)
	}
	if got := r.cfgRead(t, 1, regROM, 4); got != 0 {
		t.Errorf("expansion ROM reads %#x, want 0", got)
	}
	if got := r.cfgRead(t, 1, regIntLine, 1); got != 0xFF {
		t.Errorf("interrupt line %#x, want the 0xFF written", got)
	}
	if got := r.cfgRead(t, 1, regIntPin, 1); got != 0 {
		t.Errorf("interrupt pin %#x, want 0", got)
	}
	r.cfgWrite(t, 1, regCommand, 2, 0xFFFF)
	if got := r.cfgRead(t, 1, regCommand, 2); got != 0x0407 {
		t.Errorf("command after 0xFFFF = %#x, want 0x0407", got)
	}
	if got := r.cfgRead(t, 1, regStatus, 2); got != statusCapList {
		t.Errorf("status %#x, want only the capability bit", got)
	}
	if !r.f.BusMaster() {
		t.Error("bus master not set")
	}
}

func TestMalformedAndAbsent(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		dev, fn int
		reg     uint64
		n       int
	}{
		{1, 0, 1, 2},  // unaligned word
		{1, 0, 2, 4},  // unaligned dword
		{1, 0, 3, 2},  // crosses a dword
		{1, 0, 0, 8},  // 8 bytes
		{1, 0, 0, 3},  // 3 bytes
		{5, 0, 0, 4},  // absent device
		{1, 1, 0, 4},  // absent function
		{31, 7, 0, 2}, // last slot
	} {
		d := make([]byte, c.n)
		r.do(t, "pci ecam", ecamAddr(c.dev, c.fn, c.reg), false, d)
		for _, x := range d {
			if x != 0xFF {
				t.Errorf("%02x.%d %#x/%d read % x, want all ones", c.dev, c.fn, c.reg, c.n, d)
				break
			}
		}
	}
	// An unaligned write does nothing.
	d := []byte{0xFF, 0xFF}
	r.do(t, "pci ecam", ecamAddr(1, 0, regCommand+1), true, d[:2])
	r.do(t, "pci ecam", ecamAddr(1, 0, 3), true, d[:2])
	if got := r.cfgRead(t, 1, regCommand, 4); got != statusCapList<<16 {
		t.Errorf("command/status %#x after unaligned writes", got)
	}
	// Writes to an absent device are ignored (and do not panic).
	r.cfgWrite(t, 9, regCommand, 2, 7)
	if got := r.cfgRead(t, 9, 0, 4); got != 0xFFFFFFFF {
		t.Errorf("absent device reads %#x", got)
	}
}

func TestBARSizing(t *testing.T) {
	r := newRig(t)
	orig := make([]uint32, numBARs)
	for i := range numBARs {
		orig[i] = r.cfgRead(t, 1, regBAR0+4*uint64(i), 4)
		r.cfgWrite(t, 1, regBAR0+4*uint64(i), 4, 0xFFFFFFFF)
	}
	want := []uint32{
		0xFFFFC000, // 16 KiB, 32-bit, not prefetchable
		0,          // unused
		0xFFFF000C, // 64 KiB, 64-bit (bits 2:1 = 10), prefetchable (bit 3)
		0xFFFFFFFF, // upper half
		0x0000FFE1, // 32 bytes of I/O, 16-bit decoder
		0,
	}
	for i, w := range want {
		if got := r.cfgRead(t, 1, regBAR0+4*uint64(i), 4); got != w {
			t.Errorf("BAR%d sizes to %#x, want %#x", i, got, w)
		}
	}
	for i := range numBARs {
		r.cfgWrite(t, 1, regBAR0+4*uint64(i), 4, orig[i])
	}
	if b, _ := r.f.BARBase(0); b != uint64(orig[0]&^0xF) {
		t.Errorf("BAR0 restored to %#x, want %#x", b, orig[0])
	}
	// Byte writes to a BAR mask the same way.
	r.cfgWrite(t, 1, regBAR0, 1, 0xFF)
	if got := r.cfgRead(t, 1, regBAR0, 4); got != orig[0] {
		t.Errorf("low byte write changed BAR0 to %#x", got)
	}
}

func TestBARPlacement(t *testing.T) {
	r := newRig(t)
	type span struct{ base, size uint64 }
	var mem []span
	for _, c := range []struct {
		i    int
		size uint64
		io   bool
	}{{0, 16 << 10, false}, {2, 64 << 10, false}, {4, 32, true}} {
		base := uint64(r.cfgRead(t, 1, regBAR0+4*uint64(c.i), 4))
		if !c.io && c.i == 2 {
			base |= uint64(r.cfgRead(t, 1, regBAR0+4*uint64(c.i)+4, 4)) << 32
		}
		base &^= 0xF
		if c.io {
			base &^= 3
			if base < testIOBase || base+c.size > testIOBase+testIOSize {
				t.Errorf("I/O BAR%d at %#x outside the window", c.i, base)
			}
		} else {
			if base < testMMIOBase || base+c.size > testMMIOBase+testMMIOSize {
				t.Errorf("BAR%d at %#x outside the window", c.i, base)
			}
			mem = append(mem, span{base, c.size})
		}
		if base%c.size != 0 {
			t.Errorf("BAR%d at %#x not aligned to %#x", c.i, base, c.size)
		}
	}
	if a, b := mem[0], mem[1]; a.base < b.base+b.size && b.base < a.base+a.size {
		t.Errorf("BARs overlap: %+v", mem)
	}
	// A second function goes to the next device, above the first's BARs.
	f := NewFunction(testHeader)
	must(t, f.SetBAR(0, BAR{Kind: BARMem32, Size: 1 << 20}))
	a, err := r.bus.Add(f)
	must(t, err)
	if a != (Address{0, 2, 0}) {
		t.Errorf("second function at %v", a)
	}
	if b, _ := f.BARBase(0); b%(1<<20) != 0 || b < mem[1].base+mem[1].size && b+1<<20 > mem[0].base {
		t.Errorf("second function's BAR at %#x", b)
	}
	if len(r.bus.Functions()) != 3 {
		t.Errorf("%d functions, want 3", len(r.bus.Functions()))
	}
}

func TestSetBARErrors(t *testing.T) {
	f := NewFunction(testHeader)
	for _, c := range []struct {
		i int
		b BAR
	}{
		{6, BAR{Kind: BARMem32, Size: 4096}},
		{0, BAR{Kind: BARMem32, Size: 3000}},
		{0, BAR{Kind: BARMem32, Size: 2048}},
		{0, BAR{Kind: BARIO, Size: 2}},
		{0, BAR{Kind: BARIO, Size: 512}},
		{5, BAR{Kind: BARMem64, Size: 4096}},
		{0, BAR{Kind: 9, Size: 4096}},
	} {
		if err := f.SetBAR(c.i, c.b); err == nil {
			t.Errorf("SetBAR(%d, %+v) succeeded", c.i, c.b)
		}
	}
	must(t, f.SetBAR(0, BAR{Kind: BARMem64, Size: 4096}))
	if err := f.SetBAR(1, BAR{Kind: BARMem32, Size: 4096}); err == nil {
		t.Error("SetBAR on a 64-bit BAR's upper slot succeeded")
	}
}

func TestCF8(t *testing.T) {
	var resets []byte
	r := newRig(t)
	r.bus.cfg.ResetControl = func(cpu int, write bool, data []byte) {
		if write {
			resets = append(resets, data[0])
		} else {
			data[0] = 0x42
		}
	}
	port := func(p uint64, write bool, n int, v uint32) uint32 {
		d := make([]byte, n)
		putN(d, uint64(v))
		if c := r.do(t, "pci config 0xcf8-0xcff", p, write, d); c != exitcause.PIOPCIConfig {
			t.Errorf("port %#x charged %v", p, c)
		}
		return leN(d)
	}
	addr := func(dev, reg uint32) uint32 { return cf8Enable | dev<<11 | reg }
	port(0xCF8, true, 4, addr(1, 0))
	if got := port(0xCFC, false, 4, 0); got != 0x10421af4 {
		t.Errorf("CFC dword = %#x", got)
	}
	if got := port(0xCFE, false, 2, 0); got != 0x1042 {
		t.Errorf("CFE word = %#x", got)
	}
	if got := port(0xCFD, false, 1, 0); got != 0x1a {
		t.Errorf("CFD byte = %#x", got)
	}
	for _, c := range []struct {
		p uint64
		n int
	}{{0xCFD, 2}, {0xCFE, 4}, {0xCFD, 4}} {
		if got := port(c.p, false, c.n, 0); got != 0xFFFFFFFF>>(32-8*c.n) {
			t.Errorf("unaligned %#x/%d = %#x", c.p, c.n, got)
		}
	}
	// CONFIG_ADDRESS: reserved bits and 1:0 read 0; word access is not it.
	port(0xCF8, true, 4, 0xFFFFFFFF)
	if got := port(0xCF8, false, 4, 0); got != 0x80FFFFFC {
		t.Errorf("CONFIG_ADDRESS reads %#x", got)
	}
	if got := port(0xCF8, false, 2, 0); got != 0xFFFF {
		t.Errorf("word read of 0xCF8 = %#x", got)
	}
	// Bus 0xFF (the all-ones address above) is absent.
	if got := port(0xCFC, false, 4, 0); got != 0xFFFFFFFF {
		t.Errorf("bus 255 reads %#x", got)
	}
	// Enable bit off: all ones, writes ignored.
	port(0xCF8, true, 4, addr(1, regCommand)&^cf8Enable)
	if got := port(0xCFC, false, 4, 0); got != 0xFFFFFFFF {
		t.Errorf("disabled CONFIG_ADDRESS reads %#x", got)
	}
	port(0xCFC, true, 2, 7)
	if r.f.Command() != 0 {
		t.Error("write with the enable bit off reached the function")
	}
	// Data writes at the port's offset.
	port(0xCF8, true, 4, addr(1, regIntLine&^3))
	port(0xCFC, true, 1, 0x0B)
	if got := r.cfgRead(t, 1, regIntLine, 1); got != 0x0B {
		t.Errorf("interrupt line %#x through CF8/CFC", got)
	}
	// 0xCF9 byte: ResetControl.
	port(0xCF9, true, 1, 6)
	if got := port(0xCF9, false, 1, 0); got != 0x42 || len(resets) != 1 || resets[0] != 6 {
		t.Errorf("reset control: read %#x, writes % x", got, resets)
	}
	r.bus.cfg.ResetControl = nil
	if got := port(0xCF9, false, 1, 0); got != 0 {
		t.Errorf("0xCF9 without ResetControl reads %#x", got)
	}
}

func TestCapabilityList(t *testing.T) {
	r := newRig(t)
	var ids []uint32
	for p, n := r.cfgRead(t, 1, regCapPtr, 1), 0; p != 0; n++ {
		if n > 48 || p < 0x40 || p%4 != 0 {
			t.Fatalf("bad capability pointer %#x", p)
		}
		ids = append(ids, r.cfgRead(t, 1, uint64(p), 1))
		p = r.cfgRead(t, 1, uint64(p)+1, 1)
	}
	if len(ids) != 2 || ids[0] != 0x09 || ids[1] != capIDMSIX {
		t.Fatalf("capability IDs %#x, want [0x9 0x11]", ids)
	}
	// The hook's body is writable; the header is not.
	c := uint64(r.vendorCap)
	r.cfgWrite(t, 1, c, 4, 0xAABBCCDD)
	if got := r.cfgRead(t, 1, c, 4); got != 0xAABB0000|uint32(r.msixC)<<8|0x09 {
		t.Errorf("vendor capability dword 0 = %#x", got)
	}
	r.cfgWrite(t, 1, c+4, 4, 0x11223344)
	if got := r.cfgRead(t, 1, c+4, 4); got != 0x11223344 {
		t.Errorf("vendor capability dword 1 = %#x", got)
	}
	// A capability without a hook is read-only.
	f := NewFunction(testHeader)
	off, err := f.AddCapability(0x09, []byte{1, 2}, nil)
	must(t, err)
	f.WriteConfig(uint64(off), []byte{0, 0, 0, 0})
	d := make([]byte, 4)
	f.ReadConfig(uint64(off), d)
	if d[0] != 9 || d[2] != 1 || d[3] != 2 {
		t.Errorf("read-only capability reads % x", d)
	}
	if _, err := f.AddCapability(0x09, make([]byte, 300), nil); err == nil {
		t.Error("oversized capability accepted")
	}
}
