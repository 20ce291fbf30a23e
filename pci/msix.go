// This file implements MSI-X (PCI 3.0 §6.8.2): the capability's message
// control register, the vector table and pending-bit array in a memory BAR,
// and Signal, through which a device backend raises a vector.

package pci

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// MSI-X capability layout and message control bits.
const (
	capIDMSIX        = 0x11
	msixCtrlEnable   = 1 << 15
	msixCtrlFuncMask = 1 << 14
	msixMaxVectors   = 2048
	msixEntrySize    = 16
	msixVectorMasked = 1 << 0 // vector control bit 0
)

// MSIX is a function's MSI-X vectors.
type MSIX struct {
	f          *Function
	n          int
	table, pba BARLocation

	// Set by Bus.Add, then immutable.
	sink MSISink
	sid  uint16

	// mu guards the control bits, the table and the pending bits: the
	// guest's capability and table accesses (vCPU threads) race device
	// backends' Signals (any goroutine). The sink is never called with mu
	// held.
	mu       sync.Mutex
	enabled  bool
	funcMask bool
	entries  []msixEntry
	pending  []uint64 // bit v: vector v is pending

	counts     []msixCounts
	outOfRange atomic.Uint64 // Signals of vectors past the table
}

type msixEntry struct {
	addrLo, addrHi, data, ctrl uint32
}

type msixCounts struct{ delivered, pended, dropped atomic.Uint64 }

// message is one MSI to send once mu is released.
type message struct {
	vector int
	addr   uint64
	data   uint32
}

// AddMSIX gives f an MSI-X capability with the given number of vectors
// (1-2048), its table and PBA at the given places inside memory BARs that
// SetBAR has declared. Accesses there go to the MSIX; the rest of those BARs
// stays the BARs' regions'.
func (f *Function) AddMSIX(vectors int, table, pba BARLocation) (*MSIX, error) {
	if f.bus != nil {
		return nil, errAdded
	}
	if f.msix != nil {
		return nil, fmt.Errorf("pci: function already has MSI-X")
	}
	if vectors < 1 || vectors > msixMaxVectors {
		return nil, fmt.Errorf("pci: MSI-X with %d vectors (1-2048)", vectors)
	}
	tableLen, pbaLen := uint64(vectors)*msixEntrySize, pbaBytes(vectors)
	for _, r := range []struct {
		what string
		loc  BARLocation
		n    uint64
	}{{"table", table, tableLen}, {"PBA", pba, pbaLen}} {
		if r.loc.BAR < 0 || r.loc.BAR >= numBARs {
			return nil, fmt.Errorf("pci: MSI-X %s in BAR %d: no such BAR", r.what, r.loc.BAR)
		}
		s := f.bars[r.loc.BAR]
		if s.Kind != BARMem32 && s.Kind != BARMem64 {
			return nil, fmt.Errorf("pci: MSI-X %s in BAR %d, which is not a memory BAR", r.what, r.loc.BAR)
		}
		if r.loc.Off%8 != 0 || r.loc.Off+r.n > s.Size || r.loc.Off > s.Size {
			return nil, fmt.Errorf("pci: MSI-X %s at %#x (%#x bytes) is unaligned or outside BAR %d", r.what, r.loc.Off, r.n, r.loc.BAR)
		}
		if r.loc.Off > 0xFFFFFFF8 {
			return nil, fmt.Errorf("pci: MSI-X %s offset %#x does not fit the capability", r.what, r.loc.Off)
		}
	}
	if table.BAR == pba.BAR && table.Off < pba.Off+pbaLen && pba.Off < table.Off+tableLen {
		return nil, fmt.Errorf("pci: MSI-X table and PBA overlap")
	}
	m := &MSIX{f: f, n: vectors, table: table, pba: pba,
		entries: make([]msixEntry, vectors),
		pending: make([]uint64, (vectors+63)/64),
		counts:  make([]msixCounts, vectors)}
	for i := range m.entries {
		m.entries[i].ctrl = msixVectorMasked // reset state: every vector masked
	}
	body := make([]byte, 10)
	le := binary.LittleEndian
	le.PutUint16(body[0:], uint16(vectors-1))
	le.PutUint32(body[2:], uint32(table.Off)|uint32(table.BAR))
	le.PutUint32(body[6:], uint32(pba.Off)|uint32(pba.BAR))
	if _, err := f.AddCapability(capIDMSIX, body, msixCap{m}); err != nil {
		return nil, err
	}
	f.msix = m
	return m, nil
}

// pbaBytes is the PBA's size: one bit per vector in whole qwords.
func pbaBytes(vectors int) uint64 { return uint64(vectors+63) / 64 * 8 }

// Vectors is the table size.
func (m *MSIX) Vectors() int { return m.n }

// Enabled reports the MSI-X Enable bit.
func (m *MSIX) Enabled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enabled
}

// Counts returns vector's counters: messages sent to the sink (at Signal or
// when unmasking released a pending bit), Signals that found the vector
// masked (and set or kept its pending bit), and Signals dropped (MSI-X
// disabled, bus master off, or the sink refused the message).
func (m *MSIX) Counts(vector int) (delivered, pended, dropped uint64) {
	if vector < 0 || vector >= m.n {
		return 0, 0, 0
	}
	c := &m.counts[vector]
	return c.delivered.Load(), c.pended.Load(), c.dropped.Load()
}

// OutOfRange counts Signals of vectors past the table, dropped.
func (m *MSIX) OutOfRange() uint64 { return m.outOfRange.Load() }

// Pending reports vector's pending bit.
func (m *MSIX) Pending(vector int) bool {
	if vector < 0 || vector >= m.n {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending[vector/64]>>(vector%64)&1 != 0
}

// Signal raises vector: it is sent to the sink with its entry's current
// address and data, or, while the vector or the function is masked, its
// pending bit is set; with MSI-X disabled or bus mastering off it is
// dropped (and counted). Any goroutine may call Signal at any time.
func (m *MSIX) Signal(vector uint16) {
	v := int(vector)
	if v >= m.n {
		m.outOfRange.Add(1)
		return
	}
	c := &m.counts[v]
	m.mu.Lock()
	if !m.enabled || !m.f.BusMaster() {
		m.mu.Unlock()
		c.dropped.Add(1)
		return
	}
	e := &m.entries[v]
	if m.funcMask || e.ctrl&msixVectorMasked != 0 {
		m.pending[v/64] |= 1 << (v % 64)
		m.mu.Unlock()
		c.pended.Add(1)
		return
	}
	msg := message{v, uint64(e.addrHi)<<32 | uint64(e.addrLo), e.data}
	m.mu.Unlock()
	m.send(msg)
}

// send hands one message to the sink, with no lock held.
func (m *MSIX) send(msg message) {
	c := &m.counts[msg.vector]
	if m.sink != nil && m.sink(msg.vector, msg.addr, msg.data, m.sid) {
		c.delivered.Add(1)
	} else {
		c.dropped.Add(1)
	}
}

// release clears the pending bits of vectors that may now be delivered
// (MSI-X enabled, function and vector unmasked, bus master on) and returns
// their messages; mu held. only < 0 checks every vector.
func (m *MSIX) release(only int) []message {
	if !m.enabled || m.funcMask || !m.f.BusMaster() {
		return nil
	}
	var out []message
	lo, hi := 0, m.n
	if only >= 0 {
		lo, hi = only, only+1
	}
	for v := lo; v < hi; v++ {
		w, bit := v/64, uint64(1)<<(v%64)
		if m.pending[w]&bit == 0 {
			if only < 0 && m.pending[w] == 0 {
				v |= 63 // skip an empty qword
			}
			continue
		}
		e := &m.entries[v]
		if e.ctrl&msixVectorMasked != 0 {
			continue
		}
		m.pending[w] &^= bit
		out = append(out, message{v, uint64(e.addrHi)<<32 | uint64(e.addrLo), e.data})
	}
	return out
}

// flush sends whatever pending vectors may go now (after bus mastering was
// turned on). nil-safe.
func (m *MSIX) flush() {
	if m == nil {
		return
	}
	m.mu.Lock()
	msgs := m.release(-1)
	m.mu.Unlock()
	for _, msg := range msgs {
		m.send(msg)
	}
}

// msixCap serves the capability's message control register; the table and
// PBA offset/BIR dwords are read-only stored bytes.
type msixCap struct{ m *MSIX }

func (c msixCap) ReadCap(off int, data []byte) {
	m := c.m
	m.mu.Lock()
	ctrl := uint16(m.n - 1)
	if m.enabled {
		ctrl |= msixCtrlEnable
	}
	if m.funcMask {
		ctrl |= msixCtrlFuncMask
	}
	m.mu.Unlock()
	for i := range data {
		switch off + i {
		case 2:
			data[i] = byte(ctrl)
		case 3:
			data[i] = byte(ctrl >> 8)
		}
	}
}

func (c msixCap) WriteCap(off int, data []byte) {
	m := c.m
	for i, d := range data {
		if off+i != 3 { // only the high byte holds writable bits
			continue
		}
		m.mu.Lock()
		m.enabled = d&(msixCtrlEnable>>8) != 0
		m.funcMask = d&(msixCtrlFuncMask>>8) != 0
		msgs := m.release(-1)
		m.mu.Unlock()
		for _, msg := range msgs {
			m.send(msg)
		}
	}
}

// access serves an access at off inside BAR bar if it falls in the table
// or the PBA, and reports whether it did. Table and PBA accept aligned 4-
// and 8-byte accesses; anything else reads all ones and is ignored. The
// PBA is read-only.
func (m *MSIX) access(bar int, off uint64, write bool, data []byte) bool {
	n := uint64(len(data))
	inTable := bar == m.table.BAR && off >= m.table.Off && off-m.table.Off < uint64(m.n)*msixEntrySize
	inPBA := bar == m.pba.BAR && off >= m.pba.Off && off-m.pba.Off < pbaBytes(m.n)
	if !inTable && !inPBA {
		return false
	}
	if n != 4 && n != 8 || off%n != 0 {
		if !write {
			allOnes(data)
		}
		return true
	}
	le := binary.LittleEndian
	if inPBA {
		if write {
			return true
		}
		q := (off - m.pba.Off) / 8
		m.mu.Lock()
		v := m.pending[q]
		m.mu.Unlock()
		if n == 8 {
			le.PutUint64(data, v)
		} else {
			le.PutUint32(data, uint32(v>>(8*(off%8))))
		}
		return true
	}
	rel := off - m.table.Off
	if !write {
		m.mu.Lock()
		for i := uint64(0); i < n; i += 4 {
			le.PutUint32(data[i:], m.readDword(rel+i))
		}
		m.mu.Unlock()
		return true
	}
	var msgs []message
	m.mu.Lock()
	for i := uint64(0); i < n; i += 4 {
		msgs = append(msgs, m.writeDword(rel+i, le.Uint32(data[i:]))...)
	}
	m.mu.Unlock()
	for _, msg := range msgs {
		m.send(msg)
	}
	return true
}

// readDword reads the table dword at rel (mu held).
func (m *MSIX) readDword(rel uint64) uint32 {
	e := &m.entries[rel/msixEntrySize]
	switch rel % msixEntrySize / 4 {
	case 0:
		return e.addrLo
	case 1:
		return e.addrHi
	case 2:
		return e.data
	}
	return e.ctrl
}

// writeDword writes the table dword at rel (mu held) and returns the
// message an unmask released.
func (m *MSIX) writeDword(rel uint64, v uint32) []message {
	vec := int(rel / msixEntrySize)
	e := &m.entries[vec]
	switch rel % msixEntrySize / 4 {
	case 0:
		e.addrLo = v &^ 3 // dword-aligned message address: bits 1:0 read 0
	case 1:
		e.addrHi = v
	case 2:
		e.data = v
	default:
		e.ctrl = v & msixVectorMasked // the other bits are reserved
		if e.ctrl == 0 {
			return m.release(vec)
		}
	}
	return nil
}
