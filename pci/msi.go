// This file implements the MSI capability (PCI 3.0 §6.8.1) with a 64-bit
// address, per-vector masking and one vector.

package pci

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
)

// MSI capability layout (64-bit, per-vector masking): control at 2,
// address at 4 and 8, data at 12, mask bits at 16, pending bits at 20.
const (
	capIDMSI      = 0x05
	msiCtrlEnable = 1 << 0
	msiCtrl64     = 1 << 7
	msiCtrlPVM    = 1 << 8
	msiCapLen     = 24
	msiOffAddrLo  = 4
	msiOffAddrHi  = 8
	msiOffData    = 12
	msiOffMask    = 16
	msiOffPending = 20
)

// MSI is a function's single MSI vector.
type MSI struct {
	f *Function

	// Set by Bus.Add, then immutable.
	sink MSISink
	sid  uint16

	// mu guards the capability's registers: guest config accesses race
	// device backends' Signals. The sink is never called with mu held.
	mu                   sync.Mutex
	enabled              bool
	addrLo, addrHi, data uint32
	masked, pending      bool

	delivered, pended, dropped, outOfRange atomic.Uint64
}

// AddMSI gives f an MSI capability: one vector, 64-bit address,
// per-vector masking. The vector starts unmasked (as the spec's reset value).
func (f *Function) AddMSI() (*MSI, error) {
	if f.bus != nil {
		return nil, errAdded
	}
	if f.msi != nil {
		return nil, fmt.Errorf("pci: function already has MSI")
	}
	m := &MSI{f: f}
	body := make([]byte, msiCapLen-capHeaderLength)
	binary.LittleEndian.PutUint16(body, msiCtrl64|msiCtrlPVM) // Multiple Message Capable 0: one vector
	if _, err := f.AddCapability(capIDMSI, body, msiCap{m}); err != nil {
		return nil, err
	}
	f.msi = m
	return m, nil
}

// Vectors is 1.
func (m *MSI) Vectors() int { return 1 }

// Enabled reports the MSI Enable bit.
func (m *MSI) Enabled() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.enabled
}

// Counts returns the vector's counters, as MSIX.Counts; vector must be 0.
func (m *MSI) Counts(vector int) (delivered, pended, dropped uint64) {
	if vector != 0 {
		return 0, 0, 0
	}
	return m.delivered.Load(), m.pended.Load(), m.dropped.Load()
}

// Signal raises the vector: sent, pending while masked, or dropped while
// MSI is disabled or bus mastering is off. Any goroutine, any time.
func (m *MSI) Signal(vector uint16) {
	if vector != 0 {
		m.outOfRange.Add(1)
		return
	}
	m.mu.Lock()
	switch {
	case !m.enabled || !m.f.BusMaster():
		m.mu.Unlock()
		m.dropped.Add(1)
		return
	case m.masked:
		m.pending = true
		m.mu.Unlock()
		m.pended.Add(1)
		return
	}
	addr, data := m.message()
	m.mu.Unlock()
	m.send(addr, data)
}

// message is the MSI write (mu held): Multiple Message Enable is 0, so
// the data is used as programmed (its low 16 bits, the upper half 0).
func (m *MSI) message() (uint64, uint32) {
	return uint64(m.addrHi)<<32 | uint64(m.addrLo), m.data & 0xFFFF
}

func (m *MSI) send(addr uint64, data uint32) {
	if m.sink != nil && m.sink(0, addr, data, m.sid) {
		m.delivered.Add(1)
	} else {
		m.dropped.Add(1)
	}
}

// release clears the pending bit if the vector may now go (mu held).
func (m *MSI) release() (addr uint64, data uint32, ok bool) {
	if !m.pending || !m.enabled || m.masked || !m.f.BusMaster() {
		return 0, 0, false
	}
	m.pending = false
	addr, data = m.message()
	return addr, data, true
}

// flush sends a pending vector that may go now. nil-safe.
func (m *MSI) flush() {
	if m == nil {
		return
	}
	m.mu.Lock()
	addr, data, ok := m.release()
	m.mu.Unlock()
	if ok {
		m.send(addr, data)
	}
}

// msiCap serves the capability's registers from the MSI's state.
type msiCap struct{ m *MSI }

func (c msiCap) regs() [msiCapLen]byte {
	m := c.m
	var r [msiCapLen]byte
	le := binary.LittleEndian
	ctrl := uint16(msiCtrl64 | msiCtrlPVM)
	if m.enabled {
		ctrl |= msiCtrlEnable
	}
	le.PutUint16(r[2:], ctrl)
	le.PutUint32(r[msiOffAddrLo:], m.addrLo)
	le.PutUint32(r[msiOffAddrHi:], m.addrHi)
	le.PutUint16(r[msiOffData:], uint16(m.data))
	if m.masked {
		r[msiOffMask] = 1
	}
	if m.pending {
		r[msiOffPending] = 1
	}
	return r
}

func (c msiCap) ReadCap(off int, data []byte) {
	c.m.mu.Lock()
	r := c.regs()
	c.m.mu.Unlock()
	copy(data, r[off:])
}

func (c msiCap) WriteCap(off int, data []byte) {
	m := c.m
	m.mu.Lock()
	r := c.regs()
	copy(r[off:], data)
	le := binary.LittleEndian
	m.enabled = r[2]&msiCtrlEnable != 0 // MME (bits 6:4) stays 0: one vector
	m.addrLo = le.Uint32(r[msiOffAddrLo:]) &^ 3
	m.addrHi = le.Uint32(r[msiOffAddrHi:])
	m.data = uint32(le.Uint16(r[msiOffData:]))
	m.masked = r[msiOffMask]&1 != 0 // pending bits (offset 20) are read-only
	addr, d, ok := m.release()
	m.mu.Unlock()
	if ok {
		m.send(addr, d)
	}
}
