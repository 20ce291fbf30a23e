package devices

// Marker is govmm's accounting-window port (0x660): a 32-bit write of N > 0
// opens measured section N, a write of 0 closes it. The guest brackets the
// code whose exits it wants counted exactly.
type Marker struct {
	Mark func(cpu, id int)
}

func (m *Marker) In(cpu int, port uint16, data []byte) { putLE(data, 0) }

func (m *Marker) Out(cpu int, port uint16, data []byte) {
	if port == 0x660 {
		m.Mark(cpu, int(le(data)))
	}
}
