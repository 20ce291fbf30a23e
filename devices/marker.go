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
//	IN 0x674  exits device MSIs caused their receivers, all vCPUs (the
//	          HLT exits they woke, the kicks and interrupt windows they
//	          made, their EOIs: what a device's interrupts cost)
//
// And a running count the guest can compare with its own interrupt
// counters (the low 32 bits: the guest subtracts two readings):
//
//	OUT 0x670 v  select vector v (low 8 bits) for the writing vCPU
//	IN  0x670    injections of the selected vector into the reading vCPU
//	             since it started (withdrawn ones not counted)
//
// Read with interrupts off, it equals what that CPU has taken: govmm
// injects only into a vCPU that can take the interrupt at once.
type Marker struct {
	Mark func(cpu, id int)
	// Last returns the counts of the last closed section as seen by cpu;
	// nil reads as zeros.
	Last func(cpu int) SectionCounts
	// Injected returns how often vector has been injected into cpu; nil
	// reads as zeros.
	Injected func(cpu int, vector uint8) uint64

	// vector[cpu] is cpu's selection at 0x670. A vCPU's port exits run on
	// its own thread, so each slot has one writer and one reader: no lock.
	vector []uint8
}

// SectionCounts are what a section's reader sees at the marker's ports:
// govmm's counts of the last closed section (accounting.SectionCounts has
// the same fields; vmm converts one into the other).
type SectionCounts struct {
	All, Own       uint64 // exits of all vCPUs; of the reading vCPU
	IPIsDelivered  uint64 // IPI destinations reached, all kinds
	IPIsSent       uint64 // ICR writes and PV sends that sent an IPI
	DeviceIRQExits uint64 // exits device MSIs caused their receivers, all vCPUs
}

// MarkerPorts is the number of ports from 0x660 the marker answers.
const MarkerPorts = 0x18

// NewMarker returns a marker for cpus vCPUs.
func NewMarker(cpus int, mark func(cpu, id int), last func(cpu int) SectionCounts,
	injected func(cpu int, vector uint8) uint64) *Marker {
	return &Marker{Mark: mark, Last: last, Injected: injected, vector: make([]uint8, cpus)}
}

func (m *Marker) In(cpu int, port uint16, data []byte) {
	var v uint64
	switch off := port &^ 3; {
	case off == 0x670:
		if m.Injected != nil && cpu < len(m.vector) {
			v = m.Injected(cpu, m.vector[cpu]) & 0xFFFFFFFF
		}
	case m.Last != nil:
		c := m.Last(cpu)
		switch off {
		case 0x660:
			v = c.All
		case 0x664:
			v = c.Own
		case 0x668:
			v = c.IPIsDelivered
		case 0x66C:
			v = c.IPIsSent
		case 0x674:
			v = c.DeviceIRQExits
		}
		v = min(v, 0xFFFFFFFF)
	}
	putLE(data, v)
}

func (m *Marker) Out(cpu int, port uint16, data []byte) {
	switch {
	case port == 0x660:
		m.Mark(cpu, int(le(data)))
	case port == 0x670 && cpu < len(m.vector):
		m.vector[cpu] = uint8(le(data))
	}
}
