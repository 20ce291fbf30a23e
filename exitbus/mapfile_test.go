package exitbus

import (
	"reflect"
	"strings"
	"testing"
)

func TestMapFileRoundTrip(t *testing.T) {
	in := []Entry{
		{Space: PIO, Base: 0x3F8, End: 0x3FF, Name: "COM1 serial"},
		{Space: MMIO, Base: 0xFEE00000, End: 0xFEE00FFF, Name: "xAPIC page", PerCPU: true, Movable: true},
		{Space: MSR, Base: 0x1B, End: 0x1B, Name: "APIC_BASE", PerCPU: true, Filter: true},
		{Space: MMIO, Base: 1 << 40, End: 1<<40 + 1, Name: strings.Repeat("n", 100)},
	}
	b := EncodeMap(in)
	if len(b) != len(in)*MapRecordSize {
		t.Fatalf("%d bytes for %d entries", len(b), len(in))
	}
	out, err := DecodeMap(b)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]Entry(nil), in...)
	want[3].Name = strings.Repeat("n", MapNameLen-1) // cut, still NUL-terminated
	if !reflect.DeepEqual(out, want) {
		t.Errorf("decoded %+v\nwant %+v", out, want)
	}
	if _, err := DecodeMap(b[:MapRecordSize+1]); err == nil {
		t.Error("a partial record decoded")
	}
	bad := EncodeMap([]Entry{{Space: 7}})
	if _, err := DecodeMap(bad); err == nil {
		t.Error("space 7 decoded")
	}
}
