// This file implements the register interface (82093AA datasheet 3.0): the
// IOREGSEL/IOWIN pair and the EOI register in the MMIO page, and the
// indirect registers behind IOWIN.

package vioapic

// ReadMMIO reads len(data) bytes at offset off of the IOAPIC page. See the
// package comment for the accepted offsets and sizes (KVM's rules).
func (a *IOAPIC) ReadMMIO(off uint64, data []byte) {
	var v uint32
	switch len(data) {
	case 1, 2, 4, 8:
		a.mu.Lock()
		switch off & 0xFF {
		case RegSel:
			v = uint32(a.sel)
		case RegWin:
			v = a.readLocked()
		}
		a.mu.Unlock()
	}
	clear(data)
	for i := 0; i < len(data) && i < 4; i++ {
		data[i] = byte(v >> (8 * i))
	}
}

// WriteMMIO writes data at offset off of the IOAPIC page. A write to the
// EOI register acts as EOI of its low byte.
func (a *IOAPIC) WriteMMIO(off uint64, data []byte) {
	var v uint32
	switch len(data) {
	case 1, 2, 4, 8:
		for i := 0; i < len(data) && i < 4; i++ {
			v |= uint32(data[i]) << (8 * i)
		}
	default:
		return
	}
	switch off & 0xFF {
	case RegSel:
		a.mu.Lock()
		a.sel = uint8(v)
		a.mu.Unlock()
	case RegWin:
		var b batch
		a.mu.Lock()
		a.writeLocked(v, &b)
		a.mu.Unlock()
		a.run(&b)
	case RegEOI:
		a.EOI(uint8(v))
	}
}

// readLocked reads the register IOREGSEL selects. Unknown indices read all
// ones, as on KVM.
func (a *IOAPIC) readLocked() uint32 {
	switch a.sel {
	case IndexID, IndexArb:
		return uint32(a.id) << 24
	case IndexVersion:
		return Version
	}
	p, hi, ok := rteIndex(a.sel)
	if !ok {
		return 0xFFFFFFFF
	}
	if hi {
		return uint32(a.rte[p] >> 32)
	}
	return uint32(a.rte[p])
}

// writeLocked writes the register IOREGSEL selects; fires go into b.
func (a *IOAPIC) writeLocked(v uint32, b *batch) {
	if a.sel == IndexID {
		a.id = uint8(v>>24) & 0xF
		return
	}
	p, hi, ok := rteIndex(a.sel)
	if !ok {
		return // version, arbitration, unknown: read-only or absent
	}
	old := a.rte[p]
	e := old&^0xFFFFFFFF | uint64(v)
	if hi {
		e = old&0xFFFFFFFF | uint64(v)<<32
	}
	const ro = RTERemoteIRR | RTEDeliveryStatus
	e = e&^ro | old&ro
	if e&RTELevel == 0 {
		e &^= RTERemoteIRR
	}
	a.rte[p] = e
	if e&RTELevel != 0 && a.assertedLocked(p) {
		a.serviceLocked(p, b)
	}
}

// rteIndex names the redirection entry dword at indirect index i.
func rteIndex(i uint8) (pin int, hi, ok bool) {
	if i < IndexRTE || i >= IndexRTE+2*Pins {
		return 0, false, false
	}
	return int(i-IndexRTE) / 2, i&1 != 0, true
}
