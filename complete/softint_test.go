package complete

import "testing"

// gateBytes is the first 8 bytes of an IDT gate with the given access byte.
func gateBytes(access byte) []byte { return []byte{0x00, 0x10, 0x18, 0x00, 0x00, access, 0x10, 0x00} }

func TestCheckSoftInt(t *testing.T) {
	for _, c := range []struct {
		name   string
		gate   []byte
		long   bool
		cpl    uint8
		fault  uint8
		task   bool
		vector uint8
	}{
		{"long interrupt gate", gateBytes(0x8E), true, 0, 0, false, 0x80},
		{"long trap gate", gateBytes(0x8F), true, 0, 0, false, 0x80},
		{"beyond the limit", nil, true, 0, 13, false, 0x80},
		{"long mode has no 32-bit task gate", gateBytes(0x85), true, 0, 13, false, 0x80},
		{"long mode has no 16-bit gate", gateBytes(0x86), true, 0, 13, false, 0x80},
		{"system type 0 is no gate", gateBytes(0x80), false, 0, 13, false, 0x80},
		{"absent gate", gateBytes(0x0E), true, 0, 11, false, 0x82},
		{"type is checked before presence", gateBytes(0x01), true, 0, 13, false, 0x82},
		{"DPL 0 gate from CPL 3", gateBytes(0x8E), true, 3, 13, false, 0x80},
		{"DPL 3 gate from CPL 3", gateBytes(0xEE), true, 3, 0, false, 0x80},
		{"DPL is checked before presence", gateBytes(0x0E), true, 3, 13, false, 0x80},
		{"legacy 16-bit interrupt gate", gateBytes(0x86), false, 0, 0, false, 0x40},
		{"legacy 32-bit trap gate", gateBytes(0x8F), false, 0, 0, false, 0x40},
		{"legacy task gate", gateBytes(0x85), false, 0, 0, true, 0x40},
	} {
		f, task := checkSoftInt(c.gate, c.vector, c.long, c.cpl)
		if f.vector != c.fault || task != c.task {
			t.Errorf("%s: fault %d task %v, want fault %d task %v", c.name, f.vector, task, c.fault, c.task)
		}
		if f.vector != 0 && f.code != uint32(c.vector)*8+2 {
			t.Errorf("%s: error code %#x, want %#x (IDT bit, not EXT)", c.name, f.code, uint32(c.vector)*8+2)
		}
	}
}
