// Tests of the register interface: ID, version, arbitration, redirection
// entries and their read-only bits, access sizes and offsets, and the
// pure decoding helpers.

package vioapic

import (
	"testing"

	"github.com/govmm/govmm/vlapic"
)

func TestIDVersionArbitration(t *testing.T) {
	a := New(5, nil)
	tests := []struct {
		name  string
		index uint8
		write uint32 // 0: no write
		want  uint32
	}{
		{"id power-on", IndexID, 0, 5 << 24},
		{"version", IndexVersion, 0, 0x00170020},
		{"arbitration", IndexArb, 0, 5 << 24},
		{"id writable 27:24 only", IndexID, 0xFFFFFFFF, 0x0F000000},
		{"arbitration follows id", IndexArb, 0, 0x0F000000},
		{"id write 3", IndexID, 0x03000000, 0x03000000},
		{"version read-only", IndexVersion, 0x12345678, 0x00170020},
		{"arbitration read-only", IndexArb, 0x0A000000, 0x03000000},
		{"unknown index 3", 0x03, 0, 0xFFFFFFFF},
		{"unknown index 0x0F", 0x0F, 0, 0xFFFFFFFF},
		{"past the table", IndexRTE + 2*Pins, 0x1234, 0xFFFFFFFF},
		{"0xFF", 0xFF, 0x1234, 0xFFFFFFFF},
	}
	for _, tt := range tests {
		if tt.write != 0 {
			writeReg(a, tt.index, tt.write)
		}
		if got := readReg(a, tt.index); got != tt.want {
			t.Errorf("%s: index %#x = %#x, want %#x", tt.name, tt.index, got, tt.want)
		}
	}
	if s := a.Snapshot(); s.ID != 3 || s.Version != Version || s.Arbitration != 3<<24 {
		t.Errorf("snapshot ID %d version %#x arb %#x", s.ID, s.Version, s.Arbitration)
	}
}

func TestIOREGSEL(t *testing.T) {
	a, _ := newIOAPIC(t)
	w32(a, RegSel, 0x1234)
	if got := r32(a, RegSel); got != 0x34 {
		t.Errorf("IOREGSEL = %#x, want 0x34 (8 bits)", got)
	}
}

func TestRTEReadWrite(t *testing.T) {
	tests := []struct {
		name      string
		pin       int
		before    uint64 // Remote IRR state set up via a level fire when bit 14 set
		write     uint64
		want      uint64
		remoteIRR bool // pin left with Remote IRR set before the write
	}{
		{"power-on masked", 3, 0, RTEMasked, RTEMasked, false},
		{"all writable bits", 0, 0, 0xFFFFFFFF_FFFFFFFF, 0xFFFFFFFF_FFFFFFFF &^ (RTERemoteIRR | RTEDeliveryStatus), false},
		{"remappable format kept", 23, 0, 0xABCD0000_00010060, 0xABCD0000_00010060, false},
		{"delivery status read-only", 7, 0, RTEDeliveryStatus | 0x41, 0x41, false},
		{"remote IRR not settable", 7, 0, RTERemoteIRR | RTELevel | RTEMasked | 0x41, RTELevel | RTEMasked | 0x41, false},
		{"remote IRR not clearable", 2, 0, RTELevel | 0x52, RTELevel | RTERemoteIRR | 0x52, true},
		{"edge clears remote IRR", 2, 0, 0x52, 0x52, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := newIOAPIC(t)
			if tt.remoteIRR {
				setRTE(a, tt.pin, RTELevel|0x52)
				a.SetLine(tt.pin, true)
				a.SetLine(tt.pin, false)
				if getRTE(a, tt.pin)&RTERemoteIRR == 0 {
					t.Fatal("set-up: Remote IRR not set")
				}
			}
			setRTE(a, tt.pin, tt.write)
			if got := getRTE(a, tt.pin); got != tt.want {
				t.Errorf("RTE = %#x, want %#x", got, tt.want)
			}
			if got := a.Snapshot().RTE[tt.pin]; got != tt.want {
				t.Errorf("snapshot RTE = %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestRTEDwords(t *testing.T) {
	a, _ := newIOAPIC(t)
	writeReg(a, IndexRTE+2*4, 0x0001A035)
	writeReg(a, IndexRTE+2*4+1, 0x02000000)
	if got := getRTE(a, 4); got != 0x02000000_0001A035 {
		t.Fatalf("RTE 4 = %#x", got)
	}
	for p := range Pins {
		if p != 4 && getRTE(a, p) != RTEMasked {
			t.Errorf("pin %d changed: %#x", p, getRTE(a, p))
		}
	}
}

// TestMMIOSizes checks KVM's rules for access sizes and offsets.
func TestMMIOSizes(t *testing.T) {
	a := New(9, nil)
	w32(a, RegSel, IndexVersion)
	tests := []struct {
		name string
		off  uint64
		n    int
		want []byte
	}{
		{"win 4", RegWin, 4, []byte{0x20, 0, 0x17, 0}},
		{"win 1", RegWin, 1, []byte{0x20}},
		{"win 2", RegWin, 2, []byte{0x20, 0}},
		{"win 8 zero-extends", RegWin, 8, []byte{0x20, 0, 0x17, 0, 0, 0, 0, 0}},
		{"win 3 reads zeros", RegWin, 3, []byte{0, 0, 0}},
		{"win+2 unaligned", RegWin + 2, 2, []byte{0, 0}},
		{"sel 1", RegSel, 1, []byte{IndexVersion}},
		{"eoi register reads 0", RegEOI, 4, []byte{0, 0, 0, 0}},
		{"0x20 reads 0", 0x20, 4, []byte{0, 0, 0, 0}},
		{"0x110 aliases IOWIN", 0x110, 4, []byte{0x20, 0, 0x17, 0}},
	}
	for _, tt := range tests {
		got := make([]byte, tt.n)
		for i := range got {
			got[i] = 0xEE
		}
		a.ReadMMIO(tt.off, got)
		if string(got) != string(tt.want) {
			t.Errorf("%s: % x, want % x", tt.name, got, tt.want)
		}
	}
	// Writes of 1, 2 and 8 bytes use the low 32 bits; 3 bytes are ignored.
	a.WriteMMIO(RegSel, []byte{IndexID})
	a.WriteMMIO(RegWin, []byte{0, 0, 0, 0x07, 0xFF, 0xFF, 0xFF, 0xFF})
	if got := readReg(a, IndexID); got != 0x07000000 {
		t.Errorf("8-byte ID write: %#x", got)
	}
	a.WriteMMIO(RegSel, []byte{IndexID})
	a.WriteMMIO(RegWin, []byte{0, 0, 0x05})
	if got := readReg(a, IndexID); got != 0x07000000 {
		t.Errorf("3-byte write not ignored: %#x", got)
	}
	a.WriteMMIO(RegSel, []byte{0x11, 0xFF})
	if got := r32(a, RegSel); got != 0x11 {
		t.Errorf("2-byte IOREGSEL write: %#x", got)
	}
}

func TestDecodeRTE(t *testing.T) {
	tests := []struct {
		rte  uint64
		want vlapic.Message
	}{
		{0x31, vlapic.Message{Vector: 0x31, Assert: true, Source: -1}},
		{0xFF000000_0000A9F1 | RTEMasked | RTERemoteIRR | RTEActiveLow, vlapic.Message{
			Vector: 0xF1, Delivery: vlapic.LowestPriority, DestMode: vlapic.Logical,
			Trigger: vlapic.Level, Assert: true, Dest: 0xFF, Source: -1}},
		{0x03000000_00000400, vlapic.Message{Delivery: vlapic.NMI, Assert: true, Dest: 3, Source: -1}},
		{0x00000000_00000700 | 0x00FF0000_00000000, vlapic.Message{Delivery: vlapic.ExtINT, Assert: true, Source: -1}},
		{0x12000000_00008540, vlapic.Message{Vector: 0x40, Delivery: vlapic.INIT, Trigger: vlapic.Level, Assert: true, Dest: 0x12, Source: -1}},
	}
	for _, tt := range tests {
		if got := DecodeRTE(tt.rte); got != tt.want {
			t.Errorf("DecodeRTE(%#x) = %+v, want %+v", tt.rte, got, tt.want)
		}
	}
}

func TestIsRemappable(t *testing.T) {
	for _, tt := range []struct {
		rte  uint64
		want bool
	}{
		{0, false}, {RTEMasked | 0xFF, false}, {1 << 48, true},
		{0xFFFF0000_00000800, true}, {0xFF000000_00000000, false},
	} {
		if got := IsRemappable(tt.rte); got != tt.want {
			t.Errorf("IsRemappable(%#x) = %v", tt.rte, got)
		}
	}
}
