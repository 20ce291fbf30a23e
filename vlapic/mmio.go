// This file implements the xAPIC page (SDM 11.4.1): MMIO accesses at an
// offset into the 4 KiB page, with KVM's rules for odd sizes and alignment.

package vlapic

import "encoding/binary"

// ReadMMIO reads len(data) bytes at offset off of the xAPIC page. Accesses
// of 1, 2 or 4 bytes within one 32-bit register read its bytes, like KVM;
// wider, straddling or reserved accesses read zeros. Outside xAPIC mode the
// page is unbacked and reads all-ones.
func (a *LAPIC) ReadMMIO(off uint64, data []byte) {
	a.mu.Lock()
	if a.mode != ModeXAPIC {
		a.mu.Unlock()
		for i := range data {
			data[i] = 0xFF
		}
		return
	}
	align := off & 0xF
	var v uint32
	ok := false
	if n := uint64(len(data)); (n == 1 || n == 2 || n == 4) && align+n <= 4 && off <= 0x3FF {
		v, ok = a.readLocked(RegisterOfOffset(off), false)
	}
	a.mu.Unlock()
	clear(data)
	if ok {
		for i := range data {
			data[i] = byte(v >> (8 * (align + uint64(i))))
		}
	}
}

// WriteMMIO writes data at offset off of the xAPIC page. Only aligned 4-byte
// writes to a register count (SDM 11.4.1); others are ignored, as are all
// writes outside xAPIC mode.
func (a *LAPIC) WriteMMIO(off uint64, data []byte) Effect {
	r := RegisterOfOffset(off)
	eff := Effect{Register: r}
	if len(data) != 4 || off&0xF != 0 || off > 0x3FF {
		return eff
	}
	var p post
	a.mu.Lock()
	if a.mode != ModeXAPIC {
		a.mu.Unlock()
		return eff
	}
	a.writeLocked(r, binary.LittleEndian.Uint32(data), false, &p)
	eff.Settled = r == RegEOI && a.settledLocked() // as WriteX2APIC's
	a.mu.Unlock()
	a.finish(&p, &eff)
	return eff
}
