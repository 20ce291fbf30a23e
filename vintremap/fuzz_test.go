// Fuzz targets: random register sequences, random IRTEs and random queue
// contents must never panic and must leave the unit consistent.

package vintremap

import (
	"encoding/binary"
	"errors"
	"github.com/govmm/govmm/internal/fuzzops"
	"testing"
)

// fuzzOffsets are the registers worth hitting; others come at random.
var fuzzOffsets = []uint64{
	RegGCMD, RegFSTS, RegFECTL, RegFEDATA, RegFEADDR, RegFEUADDR, RegIQT, RegIQA,
	RegICS, RegIECTL, RegIEDATA, RegIEADDR, RegIRTA, RegIRTA + 4, RegFR + 12, RegFR + 28,
}

// fuzzSmallMem is guest RAM small enough that random addresses often miss.
const fuzzSmallMem = 64 << 10

// checkUnit checks what must hold after anything.
func checkUnit(t *testing.T, u *Unit) {
	t.Helper()
	s := u.Snapshot()
	if s.GSTS&^uint32(gQIE|gIRE|gSIRTP|gCFI) != 0 {
		t.Fatalf("GSTS %#x has unknown bits", s.GSTS)
	}
	if s.QueueSize < 256 || s.QueueSize > 256<<7 || s.IQH>>4 >= uint64(s.QueueSize) && s.GSTS&gQIE != 0 {
		t.Fatalf("queue size %d IQH %#x", s.QueueSize, s.IQH)
	}
	if s.Table.Entries < 2 || s.Table.Entries > 65536 {
		t.Fatalf("table %+v", s.Table)
	}
	pending := false
	for _, r := range s.FaultRecords {
		pending = pending || r.Pending
	}
	if pending != (s.FSTS&FSTSPPF != 0) {
		t.Fatalf("PPF %v but records pending %v", s.FSTS&FSTSPPF != 0, pending)
	}
	if s.FECTL&^uint32(CtlIM|CtlIP) != 0 || s.IECTL&^uint32(CtlIM|CtlIP) != 0 {
		t.Fatalf("FECTL %#x IECTL %#x", s.FECTL, s.IECTL)
	}
}

// checkResult checks a translation's outcome.
func checkResult(t *testing.T, err error) {
	t.Helper()
	var f Fault
	if err != nil && err != ErrNotInterrupt && (!errors.As(err, &f) || f.Reason < 0x20 || f.Reason > 0x26) {
		t.Fatalf("bad error %v", err)
	}
}

func FuzzRegisters(f *testing.F) {
	f.Add([]byte{0, 0x18, 0, 0, 0, 0x04, 1, 0x18, 0, 0, 0, 0x02})
	f.Add([]byte{2, 0xB8, 0x0F, 0x10, 0, 0, 0, 0x18, 0, 0, 0, 0x01, 3, 0x10})
	f.Fuzz(func(t *testing.T, in []byte) {
		mem := newMem(fuzzSmallMem)
		u := New(mem, &fakeIRQ{}, Options{EIM: len(in)%2 == 1})
		o := fuzzops.New(in)
		var b [8]byte
		for n := 0; o.More() && n < 256; n++ {
			op := o.U8()
			off := uint64(o.U16() & 0x1FFF)
			if op&0x10 != 0 {
				off = fuzzOffsets[int(op>>5)%len(fuzzOffsets)] + uint64(op&4)
			}
			size := []int{4, 8, 1, 2, 3, 16}[int(op>>1)%6]
			if size > len(b) {
				size = len(b)
			}
			switch op & 3 {
			case 0, 1:
				binary.LittleEndian.PutUint64(b[:], o.U64())
				u.WriteMMIO(off, b[:size])
			case 2:
				u.ReadMMIO(off, b[:size])
			case 3:
				if op&8 != 0 {
					_, err := u.TranslateIOAPIC(o.U64(), o.U16())
					checkResult(t, err)
				} else {
					_, err := u.TranslateMSI(0xFEE00000|uint64(o.U32()&0xFFFFF), o.U32(), o.U16())
					checkResult(t, err)
				}
			}
		}
		checkUnit(t, u)
	})
}

func FuzzIRTE(f *testing.F) {
	f.Add(uint64(1|0x40<<16|1<<40), uint64(0), uint32(0xFEE00018), uint32(0), uint16(0), true)
	f.Add(uint64(1|1<<15), uint64(1<<18|0x10), uint32(0xFEE0001C), uint32(3), uint16(0x10), false)
	f.Fuzz(func(t *testing.T, lo, hi uint64, addr, data uint32, sid uint16, eime bool) {
		r := newRig(t, Options{EIM: true})
		r.linux(eime)
		if addr&0xFFF00000 != 0xFEE00000 {
			addr = 0xFEE00000 | addr&0xFFFFF
		}
		index := addr>>5&0x7FFF | addr&4<<13
		if addr&8 != 0 {
			index += data & 0xFFFF
		}
		if index < 65536 {
			r.setRaw(int(index), lo, hi)
		}
		m, err := r.u.TranslateMSI(uint64(addr), data, sid)
		checkResult(t, err)
		if err == nil && addr&0x10 != 0 {
			if lo&1 == 0 || m.Vector != uint8(lo>>16) || !m.Assert {
				t.Fatalf("IRTE %#x %#x translated to %+v", hi, lo, m)
			}
			if !eime && m.Dest > 0xFF {
				t.Fatalf("xAPIC destination %#x", m.Dest)
			}
		}
		_, err = r.u.TranslateIOAPIC(hi^lo, sid)
		checkResult(t, err)
		checkUnit(t, r.u)
	})
}

func FuzzQI(f *testing.F) {
	f.Add([]byte{0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{1, 2, 0})
	f.Add([]byte{0x25, 0, 0, 0, 1, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0}, []byte{1, 0xFF, 3})
	f.Fuzz(func(t *testing.T, queue, tails []byte) {
		mem := newMem(fuzzSmallMem)
		irq := &fakeIRQ{}
		u := New(mem, irq, Options{})
		r := &rig{t: t, u: u, mem: mem, irq: irq}
		copy(mem.b[0x1000:], queue) // the queue at 0x1000, status writes land anywhere
		r.w64(RegIQA, 0x1000|uint64(len(tails)%3))
		r.w32(RegFECTL, 0)
		r.w32(RegIECTL, 0)
		r.command(gQIE, GSTSQIES, GSTSQIES)
		o := fuzzops.New(tails)
		for n := 0; o.More() && n < 64; n++ {
			switch v := o.U8(); v % 4 {
			case 0, 1:
				r.w32(RegIQT, uint32(o.U16())<<4)
			case 2:
				r.w32(RegFSTS, FSTSIQE|FSTSPFO)
			case 3:
				r.w32(RegICS, ICSIWC)
			}
			checkUnit(t, u)
		}
		if len(irq.got) > 2*64 {
			t.Fatalf("%d interrupts for %d writes", len(irq.got), len(tails))
		}
	})
}
