// Fuzz targets: random configuration-space and MSI-X access sequences must
// never panic and must keep the architectural invariants.

package pci

import (
	"testing"
)

// ops reads a fuzz input as a stream of small numbers; a drained input
// reads zeros.
type ops struct{ b []byte }

func (o *ops) more() bool { return len(o.b) > 0 }

func (o *ops) u8() uint8 {
	if len(o.b) == 0 {
		return 0
	}
	v := o.b[0]
	o.b = o.b[1:]
	return v
}

func (o *ops) u16() uint16 { return uint16(o.u8()) | uint16(o.u8())<<8 }
func (o *ops) u32() uint32 { return uint32(o.u16()) | uint32(o.u16())<<16 }

// size picks an access size, mostly legal ones.
func (o *ops) size() int {
	return []int{1, 2, 4, 4, 8, 3, 1, 2}[o.u8()%8]
}

var fuzzRegs = []uint64{regCommand, regBAR0, regBAR0 + 4, regBAR0 + 8, regBAR0 + 12, regBAR0 + 16,
	regBAR0 + 20, regROM, regIntLine, regCapPtr, 0x40, 0x44, 0x48, 0x4C, 0x50, 0x52, 0x100}

func FuzzConfigSpace(f *testing.F) {
	f.Add([]byte{0, 1, 1, 4, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{2, 0x04, 0x08, 0x00, 0x80, 3, 4, 2, 0xFF, 0xFF, 0xFF, 0xFF})
	f.Add([]byte{0, 1, 0, 2, 0x07, 0, 0, 0, 4, 1, 0, 4, 0, 0, 0, 0})
	f.Fuzz(fuzzCfgBody)
}

func fuzzCfgBody(t *testing.T, in []byte) {
	{
		r := newRig(t)
		o := &ops{b: in}
		ids := r.cfgRead(t, 1, 0, 4)
		for n := 0; o.more() && n < 200; n++ {
			op := o.u8() % 6
			dev := []int{1, 1, 1, 0, 2, 31}[o.u8()%6]
			var reg uint64
			if k := o.u8(); k < 200 {
				reg = fuzzRegs[int(k)%len(fuzzRegs)] + uint64(k/64)
			} else {
				reg = uint64(o.u16()) & 0xFFF
			}
			n := o.size()
			d := make([]byte, n)
			putN(d, uint64(o.u32()))
			switch op {
			case 0, 1: // ECAM
				fn := 0
				if o.u8() < 16 {
					fn = int(o.u8() % 8)
				}
				r.do(t, "pci ecam", ecamAddr(dev, fn, reg), op == 1, d)
			case 2: // CONFIG_ADDRESS
				v := uint32(cf8Enable) | uint32(dev)<<11 | uint32(reg&0xFC)
				if o.u8() < 32 {
					v = o.u32()
				}
				a := make([]byte, 4)
				putN(a, uint64(v))
				r.do(t, "pci config 0xcf8-0xcff", PortConfigAddress, true, a)
			case 3, 4: // CONFIG_DATA at any of its ports
				r.do(t, "pci config 0xcf8-0xcff", PortConfigData+uint64(o.u8()%4), op == 4, d)
			case 5: // the BARs themselves, wherever they are now
				base, _ := r.f.BARBase(int(o.u8()%3) * 2)
				r.do(t, "pci mmio window", base+uint64(o.u16()), o.u8()&1 != 0, d)
			}
			check(t, r, ids)
		}
	}
}

// check asserts what must hold after any access.
func check(t *testing.T, r *rig, ids uint32) {
	t.Helper()
	rd := func(reg uint64) uint32 {
		d := make([]byte, 4)
		r.f.ReadConfig(reg, d)
		return leN(d)
	}
	if got := rd(0); got != ids {
		t.Fatalf("IDs changed: %#x", got)
	}
	if got := rd(8); got != 0x01000001 {
		t.Fatalf("class changed: %#x", got)
	}
	if v := rd(regBAR0); v&0xF != 0 || v%(16<<10) != 0 {
		t.Fatalf("BAR0 %#x", v)
	}
	if v := rd(regBAR0 + 8); v&0xF != 0xC || v&^0xF%(64<<10) != 0 {
		t.Fatalf("BAR2 %#x", v)
	}
	if v := rd(regBAR0 + 16); v&3 != 1 || v&^3%32 != 0 || v>>16 != 0 {
		t.Fatalf("BAR4 %#x", v)
	}
	if v := rd(regBAR0 + 4); v != 0 {
		t.Fatalf("unused BAR1 %#x", v)
	}
	if v := rd(regROM); v != 0 {
		t.Fatalf("ROM %#x", v)
	}
	if v := rd(regCommand); v&0xFFFF&^cmdWritable != 0 || v>>16 != statusCapList {
		t.Fatalf("command/status %#x", v)
	}
	if got := r.cfgRead(t, 2, 0, 4); got != 0xFFFFFFFF {
		t.Fatalf("absent device reads %#x", got)
	}
	d := make([]byte, 4)
	r.do(t, "pci ecam", ecamAddr(1, 3, 0), false, d)
	if leN(d) != 0xFFFFFFFF {
		t.Fatalf("absent function reads % x", d)
	}
}

// msixState is the MSI-X state at one instant.
type msixState struct {
	enabled, fmask, bm bool
	entries            []msixEntry
	pending            []bool
}

func snap(r *rig) msixState {
	m := r.msix
	m.mu.Lock()
	defer m.mu.Unlock()
	s := msixState{enabled: m.enabled, fmask: m.funcMask, bm: r.f.BusMaster(),
		entries: append([]msixEntry(nil), m.entries...)}
	for v := range m.n {
		s.pending = append(s.pending, m.pending[v/64]>>(v%64)&1 != 0)
	}
	return s
}

// deliverable: enabled, unmasked, bus master on.
func (s *msixState) deliverable(v int) bool {
	return s.enabled && !s.fmask && s.bm && s.entries[v].ctrl&msixVectorMasked == 0
}

func FuzzMSIXTable(f *testing.F) {
	f.Add([]byte{5, 0, 1, 3, 0, 0, 6, 1, 0, 1, 12, 4, 0, 0, 0, 0, 6, 1})
	f.Add([]byte{4, 1, 5, 0, 0xC0, 6, 2, 5, 0, 0x80, 6, 2})
	f.Add([]byte{1, 0, 0, 8, 0, 0, 0xE0, 0xFE, 0, 0, 0, 0, 2, 0, 8, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := newRig(t)
		r.cfgWrite(t, 1, regCommand, 2, CmdMemory)
		b := r.bar0(t)
		o := &ops{b: in}
		for n := 0; o.more() && n < 300; n++ {
			before := snap(r)
			c0 := make([][3]uint64, rigVectors)
			for v := range rigVectors {
				c0[v] = counts(r.msix, v)
			}
			op := o.u8() % 8
			signalled := -1
			switch op {
			case 0, 1: // table access
				off := uint64(o.u8()) % (rigVectors*16 + 8)
				n := o.size()
				d := make([]byte, n)
				putN(d, uint64(o.u32())|uint64(o.u32())<<32)
				r.do(t, "pci mmio window", b+off, op == 1, d)
			case 2, 3: // PBA access
				d := make([]byte, o.size())
				r.do(t, "pci mmio window", b+rigPBA+uint64(o.u8()%8), op == 3, d)
			case 4: // message control
				r.cfgWrite(t, 1, uint64(r.msixC)+2+uint64(o.u8()%2), 1, uint32(o.u8()))
			case 5: // command: bus master on or off
				r.cfgWrite(t, 1, regCommand, 2, CmdMemory|uint32(o.u8()&1)<<2)
			default:
				signalled = int(o.u8() % (rigVectors + 1))
				r.msix.Signal(uint16(signalled))
			}
			after := snap(r)
			got := r.sink.take()
			for v := range rigVectors {
				c := counts(r.msix, v)
				dd, dp, dx := c[0]-c0[v][0], c[1]-c0[v][1], c[2]-c0[v][2]
				if v == signalled {
					switch {
					case !before.enabled || !before.bm:
						if dx != 1 || dd+dp != 0 || after.pending[v] != before.pending[v] {
							t.Fatalf("vector %d signalled while disabled: +%d/%d/%d", v, dd, dp, dx)
						}
					case !before.deliverable(v):
						if dp != 1 || dd+dx != 0 || !after.pending[v] {
							t.Fatalf("vector %d signalled while masked: +%d/%d/%d pending %v", v, dd, dp, dx, after.pending[v])
						}
					default:
						e := before.entries[v]
						if dd != 1 || dp+dx != 0 || len(got) != 1 ||
							got[0] != (msg{uint64(e.addrHi)<<32 | uint64(e.addrLo), e.data, r.f.Address().SourceID()}) {
							t.Fatalf("vector %d delivered +%d/%d/%d: %+v", v, dd, dp, dx, got)
						}
					}
					continue
				}
				if dp != 0 || dx != 0 {
					t.Fatalf("vector %d counted +%d pended +%d dropped without a Signal", v, dp, dx)
				}
				released := before.pending[v] && !after.pending[v]
				if after.pending[v] && !before.pending[v] {
					t.Fatalf("vector %d became pending without a Signal", v)
				}
				if released != (dd == 1) || dd > 1 {
					t.Fatalf("vector %d: pending %v->%v but %d delivered", v, before.pending[v], after.pending[v], dd)
				}
				if released && !after.deliverable(v) {
					t.Fatalf("vector %d delivered while not deliverable", v)
				}
				if after.pending[v] && after.deliverable(v) {
					t.Fatalf("vector %d pending while deliverable", v)
				}
			}
			var delivered uint64
			for v := range rigVectors {
				delivered += counts(r.msix, v)[0] - c0[v][0]
			}
			if uint64(len(got)) != delivered {
				t.Fatalf("sink got %d messages, %d counted", len(got), delivered)
			}
			// The PBA reads what the pending bits are.
			d := make([]byte, 8)
			r.msix.access(0, rigPBA, false, d)
			for v := range rigVectors {
				if (d[0]>>v&1 != 0) != after.pending[v] {
					t.Fatalf("PBA % x, pending %v", d, after.pending)
				}
			}
		}
	})
}
