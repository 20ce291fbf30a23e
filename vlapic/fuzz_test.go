// Fuzz targets: register sequences on the xAPIC page and the MSRs, and
// ICR decoding plus delivery, checked against invariants.

package vlapic

import (
	"encoding/binary"
	"github.com/govmm/govmm/internal/fuzzops"
	"slices"
	"testing"
)

// ops reads a fuzz input as a stream of small numbers (internal/fuzzops).
type ops = fuzzops.Reader

// interesting APIC_BASE values for the fuzzers.
var fuzzBases = []uint64{
	DefaultBase | BaseEN, DefaultBase | BaseEN | BaseEXTD, DefaultBase, 0xFED40000 | BaseEN,
	DefaultBase | BaseEXTD, DefaultBase | BaseEN | 1, 1 << 63,
}

// checkInvariants checks what must hold after any sequence of accesses.
func checkInvariants(t *testing.T, b *Bus) {
	t.Helper()
	for i := range b.Len() {
		a := b.LAPIC(i)
		s := a.Snapshot()
		isrv := uint32(0)
		for w := 7; w >= 0; w-- {
			if s.ISR[w] != 0 {
				for bit := 31; bit >= 0; bit-- {
					if s.ISR[w]&(1<<bit) != 0 {
						isrv = uint32(w*32 + bit)
						break
					}
				}
				break
			}
		}
		want := s.TPR
		if s.TPR&0xF0 < isrv&0xF0 {
			want = isrv & 0xF0
		}
		if s.PPR != want || a.ppr.Load() != want {
			t.Fatalf("cpu %d: PPR %#x, want %#x", i, s.PPR, want)
		}
		if s.SVR&svrEnable == 0 {
			for _, l := range []uint32{s.LVT.Timer, s.LVT.LINT0, s.LVT.LINT1, s.LVT.Error, s.LVT.CMCI, s.LVT.Perf, s.LVT.Thermal} {
				if l&lvtMasked == 0 {
					t.Fatalf("cpu %d: unmasked LVT %#x while software-disabled", i, l)
				}
			}
		}
		if s.Mode == ModeX2APIC && (s.ID != uint32(i) || s.LDR != x2LDR(uint32(i))) {
			t.Fatalf("cpu %d: x2APIC ID %d LDR %#x", i, s.ID, s.LDR)
		}
	}
	// The tables agree with the slow path.
	for _, m := range []Message{
		fixed(0, Physical, 1), fixed(0, Physical, 0xFF), fixed(0, Logical, 0x3),
		fixed(0, Logical, 0xF1), fixed(0, Logical, 0x12), fixed(0, Logical, 0x10001),
	} {
		var want, got []int
		for i := range b.Len() {
			if matches(b.lapics[i].key.Load(), i, m.Dest, m.DestMode) {
				want = append(want, i)
			}
		}
		b.forTargets(&m, func(a *LAPIC) {
			if keyMode(a.key.Load()) != ModeDisabled {
				got = append(got, a.cpu)
			}
		})
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: tables %v, matches %v", m, got, want)
		}
	}
}

// fuzzStep runs one operation common to both register fuzzers.
func fuzzStep(b *Bus, c *fakeClock, o *ops, op uint8) {
	a := b.LAPIC(int(o.U8()) % b.Len())
	switch op {
	case 0:
		b.Deliver(DecodeICR(o.U64(), o.U8()&1 != 0))
	case 1:
		c.advance(int64(o.U32()))
		a.Tick()
	case 2:
		if _, ok := a.Acknowledge(); ok && o.U8()&1 != 0 {
			a.EOI()
		}
	case 3:
		_ = a.SetBase(fuzzBases[int(o.U8())%len(fuzzBases)])
	case 4:
		a.TakeEvents()
		if o.U8()&1 != 0 {
			a.InitReset()
		}
	case 5:
		a.SetCR8(uint64(o.U8()))
		a.CR8()
		a.PendingVector()
	}
}

func FuzzMMIO(f *testing.F) {
	f.Add([]byte{6, 0, 0xF0, 0, 4, 0xFF, 1, 0, 0, 6, 1, 0x00, 3, 4, 0x40, 0, 0, 0})
	f.Add([]byte{6, 0, 0x20, 0x03, 4, 0x30, 0, 2, 0, 6, 0, 0x80, 0x03, 4, 0x10, 0, 0, 0, 1, 0, 0xFF, 0, 0, 0})
	f.Add([]byte{7, 1, 0x51, 0x03, 2, 6, 2, 0xE0, 0, 4, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &fakeClock{}
		b := NewBus(3, c, nil, testOptions(Options{X2APIC: true}))
		o := fuzzops.New(data)
		for n := 0; o.More() && n < 200; n++ {
			switch op := o.U8() % 8; op {
			case 6, 7: // MMIO write / read at an offset and size
				a := b.LAPIC(int(o.U8()) % b.Len())
				off := uint64(o.U8()) | uint64(o.U8()&0x1F)<<8
				size := int(o.U8() % 9)
				d := make([]byte, size)
				for i := range d {
					d[i] = o.U8()
				}
				if op == 6 {
					a.WriteMMIO(off, d)
				} else {
					a.ReadMMIO(off, d)
				}
			default:
				fuzzStep(b, c, o, op)
			}
		}
		checkInvariants(t, b)
	})
}

func FuzzMSR(f *testing.F) {
	f.Add([]byte{3, 0, 1, 6, 0, 0x0F, 0xFF, 1, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0x30, 0x40, 0, 0, 0, 2, 0, 0, 0})
	f.Add([]byte{3, 1, 1, 6, 1, 0x32, 0x30, 0, 4, 0, 0, 0, 0, 0, 6, 1, 0xE0, 0x10, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{7, 0, 0x1B, 0, 6, 0, 0x1B, 0, 0, 0x0C, 0xE0, 0xFE, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &fakeClock{tscBase: 1 << 40}
		b := NewBus(3, c, nil, testOptions(Options{X2APIC: true}))
		o := fuzzops.New(data)
		for n := 0; o.More() && n < 200; n++ {
			switch op := o.U8() % 8; op {
			case 6, 7: // MSR write / read: 0x800+x, APIC_BASE or TSC_DEADLINE
				a := b.LAPIC(int(o.U8()) % b.Len())
				sel := o.U8()
				m := uint32(MSRX2APICFirst) + uint32(sel)
				switch o.U8() % 8 {
				case 0:
					m = MSRAPICBase
				case 1:
					m = MSRTSCDeadline
				case 2:
					m = uint32(sel) << 4
				}
				if op == 6 {
					v := o.U64()
					if m == MSRTSCDeadline && v&1 != 0 {
						v = c.TSC() + v>>40 // near deadlines too
					}
					_, _ = a.WriteMSR(m, v)
				} else {
					_, _ = a.ReadMSR(m)
				}
			default:
				fuzzStep(b, c, o, op)
			}
		}
		checkInvariants(t, b)
	})
}

func FuzzDecodeICR(f *testing.F) {
	f.Add(uint64(0x0000_0003_0000_4040), true, int8(0), uint8(0))
	f.Add(uint64(0xFF00_0000_000C_4500), false, int8(1), uint8(3))
	f.Add(uint64(0x0001_0003_0000_0940), true, int8(-1), uint8(5))
	f.Fuzz(func(t *testing.T, icr uint64, x2 bool, src int8, setup uint8) {
		b := NewBus(40, &fakeClock{}, &countSink{}, testOptions(Options{X2APIC: true}))
		for i := range b.Len() {
			a := b.LAPIC(i)
			if setup&1 != 0 {
				must(t, a.SetBase(a.Base()|BaseEXTD))
			}
			if setup&2 != 0 || i%3 == 0 {
				wr(t, a, RegSVR, 0x1FF)
			}
			if setup&4 != 0 && a.Mode() == ModeXAPIC {
				wr(t, a, RegLDR, uint32(i*7)<<24)
			}
		}
		m := DecodeICR(icr, x2)
		var d [8]byte
		binary.LittleEndian.PutUint64(d[:], EncodeICR(m, x2))
		if back := DecodeICR(binary.LittleEndian.Uint64(d[:]), x2); back != m {
			t.Fatalf("round trip %+v -> %+v", m, back)
		}
		m.Source = int(src)
		if n := b.Deliver(m); n < 0 || n > b.Len() {
			t.Fatalf("Deliver = %d", n)
		}
		// And through an ICR write by CPU src.
		if a := b.LAPIC(int(uint8(src)) % b.Len()); a.Mode() == ModeX2APIC {
			_, _ = a.WriteMSR(msr(RegICR), icr)
		} else {
			binary.LittleEndian.PutUint32(d[:4], uint32(icr>>32))
			a.WriteMMIO(0x310, d[:4])
			binary.LittleEndian.PutUint32(d[:4], uint32(icr))
			a.WriteMMIO(0x300, d[:4])
		}
		checkInvariants(t, b)
	})
}
