package pvipi

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govmm/govmm/vlapic"
)

type fakeMem []byte

func (f fakeMem) Slice(gpa, n uint64) ([]byte, error) {
	if gpa+n > uint64(len(f)) {
		return nil, errors.New("not RAM")
	}
	return f[gpa : gpa+n], nil
}

type countSink struct{ n []int }

func (s *countSink) Notify(cpu int) { s.n[cpu]++ }

type clock struct{}

func (clock) Now() int64  { return 0 }
func (clock) TSC() uint64 { return 0 }

func TestDecodeAndDeliver(t *testing.T) {
	const cpus = 300
	sink := &countSink{n: make([]int, cpus)}
	bus := vlapic.NewBus(cpus, clock{}, sink, vlapic.Options{X2APIC: true})
	for i := 0; i < cpus; i++ {
		a := bus.LAPIC(i)
		if err := a.SetBase(vlapic.DefaultBase | vlapic.BaseEN | vlapic.BaseEXTD | map[bool]uint64{true: vlapic.BaseBSP}[i == 0]); err != nil {
			t.Fatal(err)
		}
		if _, err := a.WriteMSR(0x80F, 0x1FF); err != nil { // SVR: software enable
			t.Fatal(err)
		}
	}
	mem := make(fakeMem, 8192)
	// APIC IDs 1, 63, 64 and 299 (base 0, 5 words).
	binary.LittleEndian.PutUint64(mem[0x100:], 1<<1|1<<63)
	binary.LittleEndian.PutUint64(mem[0x108:], 1<<0)
	binary.LittleEndian.PutUint64(mem[0x120:], 1<<(299-256))
	req, err := Decode(mem, 5<<32|0x41, 0x100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := req.Deliver(bus, 0, 0); n != 4 {
		t.Fatalf("delivered to %d CPUs, want 4", n)
	}
	for _, id := range []int{1, 63, 64, 299} {
		if v, ok := bus.LAPIC(id).PendingVector(); !ok || v != 0x41 {
			t.Errorf("CPU %d: pending %#x %v", id, v, ok)
		}
		if sink.n[id] != 1 {
			t.Errorf("CPU %d notified %d times", id, sink.n[id])
		}
	}
	if _, ok := bus.LAPIC(2).PendingVector(); ok {
		t.Error("CPU 2 got an IPI it was not sent")
	}
	// A window based at 256: bit 43 of word 0 is APIC ID 299.
	binary.LittleEndian.PutUint64(mem[0x200:], 1<<43)
	req, err = Decode(mem, 1<<32|0x400, 0x200, 256) // NMI
	if err != nil || req.Deliver(bus, 0, 0) != 1 {
		t.Fatalf("NMI window: %v", err)
	}
	if bus.LAPIC(299).TakeEvents().NMIs == 0 {
		t.Error("CPU 299 got no NMI")
	}
}

func TestDecodeInvalid(t *testing.T) {
	mem := make(fakeMem, 8192)
	for _, c := range []struct {
		value, rsi, rdi uint64
	}{
		{1<<32 | 0x41 | 1<<11, 0, 0}, // reserved EAX bit
		{0<<32 | 0x41, 0, 0},         // no words
		{65<<32 | 0x41, 0, 0},        // too many words
		{1<<32 | 0x41, 4, 0},         // misaligned bitmap
		{2<<32 | 0x41, 0xFF8, 0},     // crosses a page
		{1<<32 | 0x41, 1 << 20, 0},   // not RAM
		{1<<32 | 0x541, 0, 0},        // INIT delivery
		{1<<32 | 0x0F, 0, 0},         // fixed vector below 16
		{1<<32 | 0x41, 0, 1 << 32},   // base beyond 32 bits
	} {
		if _, err := Decode(mem, c.value, c.rsi, c.rdi); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err %v, want ErrInvalid", c, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(uint64(1<<32|0x41), uint64(0x100), uint64(0))
	mem := make(fakeMem, 8192)
	bus := vlapic.NewBus(8, clock{}, &countSink{n: make([]int, 8)}, vlapic.Options{X2APIC: true})
	f.Fuzz(func(t *testing.T, value, rsi, rdi uint64) {
		if req, err := Decode(mem, value, rsi, rdi); err == nil {
			req.Deliver(bus, 0, 0)
		}
	})
}
