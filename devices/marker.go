package devices

// Marker is govmm's accounting-window port (0x660): a 32-bit write of N > 0
// opens measured section N, a write of 0 closes it. The guest brackets the
// code whose exits it wants counted exactly.
//
// Reads give the guest what govmm counted in the last closed section, so a
// benchmark can print exits beside its own timings (32-bit reads, values
// saturate at 2^32-1):
//
//	IN 0x660  exits of all vCPUs
//	IN 0x664  exits of the reading vCPU
//	IN 0x668  IPIs delivered (destinations reached, all kinds)
//	IN 0x66C  IPIs sent (ICR writes and PV sends)
type Marker struct {
	Mark func(cpu, id int)
	// Last returns the counts of the last closed section as seen by cpu;
	// nil reads as zeros.
	Last func(cpu int) (all, own, delivered, sent uint64)
}

// MarkerPorts is the number of ports from 0x660 the marker answers.
const MarkerPorts = 16

func (m *Marker) In(cpu int, port uint16, data []byte) {
	var v uint64
	if m.Last != nil {
		all, own, delivered, sent := m.Last(cpu)
		v = [4]uint64{all, own, delivered, sent}[port>>2&3]
	}
	if v > 0xFFFFFFFF {
		v = 0xFFFFFFFF
	}
	putLE(data, v)
}

func (m *Marker) Out(cpu int, port uint16, data []byte) {
	if port == 0x660 {
		m.Mark(cpu, int(le(data)))
	}
}
