package exitbus

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

var nop = HandlerFunc(func(*Access) error { return nil })

func TestOverlapNamesBoth(t *testing.T) {
	var b Bus
	if err := b.Register(Range{Space: PIO, Base: 0x3F8, Len: 8, Name: "serial", Cause: Fixed(exitcause.PIOSerial), Handler: nop}); err != nil {
		t.Fatal(err)
	}
	err := b.Register(Range{Space: PIO, Base: 0x3FF, Len: 2, Name: "intruder", Handler: nop})
	if err == nil || !strings.Contains(err.Error(), "serial") || !strings.Contains(err.Error(), "intruder") {
		t.Fatalf("overlap: %v", err)
	}
	// Adjacent is fine; the same base in another space is fine.
	for _, r := range []Range{{Space: PIO, Base: 0x400, Len: 1, Name: "next"}, {Space: PIO, Base: 0x3F0, Len: 8, Name: "before"},
		{Space: MSR, Base: 0x3F8, Len: 8, Name: "msr"}} {
		r.Handler = nop
		if err := b.Register(r); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
	}
	for _, r := range []Range{{Space: MMIO, Base: 1, Len: 0, Name: "empty", Handler: nop}, {Space: MMIO, Base: ^uint64(0), Len: 2, Name: "wraps", Handler: nop},
		{Space: MMIO, Base: 0, Len: 1, Name: "no handler"}} {
		if err := b.Register(r); err == nil {
			t.Errorf("%s accepted", r.Name)
		}
	}
}

func TestLookup(t *testing.T) {
	var b Bus
	for i, base := range []uint64{0x600, 0x3F8, 0xF4, 0x2000, 0x660} {
		if err := b.Register(Range{Space: PIO, Base: base, Len: 4, Name: string(rune('a' + i)), Handler: nop}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		addr uint64
		want string
		off  uint64
	}{{0xF4, "c", 0}, {0xF7, "c", 3}, {0xF8, "", 0}, {0x3FB, "b", 3}, {0x0, "", 0}, {0x2003, "d", 3}, {0x2004, "", 0}, {0x600, "a", 0}, {0xFFFF, "", 0}} {
		r, base := b.Lookup(0, PIO, c.addr)
		switch {
		case c.want == "" && r != nil:
			t.Errorf("%#x: %s, want unclaimed", c.addr, r.Name)
		case c.want != "" && (r == nil || r.Name != c.want || c.addr-base != c.off):
			t.Errorf("%#x: %v at %#x, want %s", c.addr, r, base, c.want)
		}
	}
	if r, _ := b.Lookup(0, MMIO, 0xF4); r != nil {
		t.Errorf("PIO range found in MMIO")
	}
}

// A movable per-vCPU range shadows fixed ranges where its vCPU put it, for
// that vCPU only, and is nowhere while At says so.
func TestMovable(t *testing.T) {
	var b Bus
	at := map[int]uint64{0: 0xFEE00000, 1: 0xFEC00000}
	present := true
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFEC00000, Len: 0x1000, Name: "IOAPIC", Handler: nop})
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFEE00000, Len: 0x1000, Name: "xAPIC", Handler: nop,
		At: func(cpu int) (uint64, bool) { return at[cpu], present }})
	if err := b.Register(Range{Space: MMIO, Base: 0xFEE00800, Len: 4, Name: "under", Handler: nop}); err == nil {
		t.Error("a fixed range under the movable range's reset base accepted")
	}
	name := func(cpu int, addr uint64) string {
		if r, _ := b.Lookup(cpu, MMIO, addr); r != nil {
			return r.Name
		}
		return ""
	}
	if n := name(0, 0xFEE00030); n != "xAPIC" {
		t.Errorf("cpu 0 at its page: %q", n)
	}
	if n := name(1, 0xFEE00030); n != "" {
		t.Errorf("cpu 1 at cpu 0's page: %q", n)
	}
	if n := name(1, 0xFEC00010); n != "xAPIC" {
		t.Errorf("cpu 1's page moved over the IOAPIC: %q", n)
	}
	if n := name(0, 0xFEC00010); n != "IOAPIC" {
		t.Errorf("cpu 0 at the IOAPIC: %q", n)
	}
	present = false
	if n := name(1, 0xFEC00010); n != "IOAPIC" {
		t.Errorf("page gone (x2APIC mode): %q", n)
	}
	m := b.Map()
	if len(m) != 2 || m[0].Name != "IOAPIC" || m[1].Name != "xAPIC" || !m[1].Movable || m[1].End != 0xFEE00FFF {
		t.Errorf("map %+v", m)
	}
}

// LookupOthers skips the LoopServed movable ranges (a vCPU's xAPIC page,
// which its loop served first) and only those: another movable range and
// the fixed ones are found as Lookup finds them.
func TestLookupOthers(t *testing.T) {
	var b Bus
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFEC00000, Len: 0x1000, Name: "IOAPIC", Handler: nop})
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFEE00000, Len: 0x1000, Name: "xAPIC", Handler: nop, LoopServed: true,
		At: func(int) (uint64, bool) { return 0xFEE00000, true }})
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFED00000, Len: 0x1000, Name: "moved", Handler: nop,
		At: func(int) (uint64, bool) { return 0xFED00000, true }})
	for _, c := range []struct {
		addr          uint64
		lookup, other string
	}{{0xFEE00030, "xAPIC", ""}, {0xFED00010, "moved", "moved"}, {0xFEC00010, "IOAPIC", "IOAPIC"}, {0xFEB00000, "", ""}} {
		name := func(r *Range, _ uint64) string {
			if r == nil {
				return ""
			}
			return r.Name
		}
		if n := name(b.Lookup(0, MMIO, c.addr)); n != c.lookup {
			t.Errorf("Lookup(%#x) = %q, want %q", c.addr, n, c.lookup)
		}
		if n := name(b.LookupOthers(0, MMIO, c.addr)); n != c.other {
			t.Errorf("LookupOthers(%#x) = %q, want %q", c.addr, n, c.other)
		}
	}
}

func TestCauses(t *testing.T) {
	check := func(c Cause, off uint64, write bool, want exitcause.Cause, early bool) {
		t.Helper()
		if got, ok := c.Of(off, write); got != want || ok != early {
			t.Errorf("Of(%#x, %v) = %v %v, want %v %v", off, write, got, ok, want, early)
		}
	}
	check(Fixed(exitcause.PIOSerial), 3, true, exitcause.PIOSerial, true)
	rw := ReadWrite(exitcause.MSRAPICBaseRead, exitcause.MSRAPICBaseWrite)
	check(rw, 0, false, exitcause.MSRAPICBaseRead, true)
	check(rw, 0, true, exitcause.MSRAPICBaseWrite, true)
	by := ByAccess(func(off uint64, write bool) exitcause.Cause { return exitcause.APIC(true, write, uint16(off)) })
	check(by, 0x30, true, exitcause.APIC(true, true, 0x30), true)
	check(HandlerCharges, 0, true, 0, false)
	var a Access
	a.Reset(1, 0x1005, 0x1000, true, nil)
	if _, ok := a.Charged(); ok || a.Off != 5 || a.CPU != 1 {
		t.Errorf("reset access %+v", a)
	}
	a.Charge(exitcause.SyscallDoorbell)
	if c, ok := a.Charged(); !ok || c != exitcause.SyscallDoorbell {
		t.Errorf("charged %v %v", c, ok)
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	var b Bus
	for i := range 20 {
		mustRegister(t, &b, Range{Space: PIO, Base: uint64(i * 16), Len: 8, Name: "r", Handler: nop})
	}
	mustRegister(t, &b, Range{Space: MMIO, Base: 0xFEE00000, Len: 0x1000, Name: "m", Handler: nop,
		At: func(int) (uint64, bool) { return 0xFEE00000, true }})
	if n := testing.AllocsPerRun(100, func() {
		b.Lookup(0, PIO, 0x95)
		b.Lookup(0, MMIO, 0xFEE00030)
	}); n != 0 {
		t.Errorf("%v allocations per lookup", n)
	}
}

func mustRegister(t *testing.T, b *Bus, r Range) {
	t.Helper()
	if err := b.Register(r); err != nil {
		t.Fatal(err)
	}
}

// A map entry's JSON names its space, and reads back.
func TestEntryJSON(t *testing.T) {
	in := Entry{Space: MSR, Base: 0x800, End: 0x8FF, Name: "x2APIC", PerCPU: true}
	b, err := json.Marshal(in)
	if err != nil || !strings.Contains(string(b), `"space":"msr"`) {
		t.Fatalf("%s, %v", b, err)
	}
	var out Entry
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("read back %+v (%v), want %+v", out, err, in)
	}
	if err := json.Unmarshal([]byte(`{"space":"dma"}`), &out); err == nil {
		t.Error("an unknown space was accepted")
	}
}
