package devices

import "sync"

// MSITestDev is govmm's MSI test device: it lets a bare-metal guest issue an
// MSI as a PCI device would, with a source-id of its choosing, so that
// interrupt remapping (and compatibility-format MSIs) can be tested without
// a PCI bus. Ports (32-bit OUTs): base+0 address low, base+4 address high,
// base+8 source-id, base+0xC data: writing it sends the MSI. Reading
// base+0xC returns 1 if the last MSI reached a CPU, 0 if it was blocked.
type MSITestDev struct {
	Send func(addr uint64, data uint32, sid uint16) bool

	mu       sync.Mutex
	addr     uint64
	sid      uint16
	lastSent bool
}

func (m *MSITestDev) In(cpu int, port uint16, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var v uint64
	switch port & 0xF {
	case 0x0:
		v = m.addr & 0xFFFFFFFF
	case 0x4:
		v = m.addr >> 32
	case 0x8:
		v = uint64(m.sid)
	case 0xC:
		if m.lastSent {
			v = 1
		}
	}
	putLE(data, v)
}

func (m *MSITestDev) Out(cpu int, port uint16, data []byte) {
	v := le(data)
	m.mu.Lock()
	switch port & 0xF {
	case 0x0:
		m.addr = m.addr&^0xFFFFFFFF | uint64(v)
	case 0x4:
		m.addr = m.addr&0xFFFFFFFF | uint64(v)<<32
	case 0x8:
		m.sid = uint16(v)
	case 0xC:
		addr, sid := m.addr, m.sid
		m.mu.Unlock()
		ok := m.Send(addr, v, sid)
		m.mu.Lock()
		m.lastSent = ok
	}
	m.mu.Unlock()
}
