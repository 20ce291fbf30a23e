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
//
// And whether govmm has served another vCPU's HLT, so that a guest which
// saw that CPU on its way into HLT knows its HLT exit is counted before
// it opens or closes a section (a wait of the guest's own cannot know:
// the vCPU's thread may get no host CPU for any length of time):
//
//	OUT 0x678 i  select vCPU i (govmm's APIC IDs are vCPU indexes)
//	IN  0x678    1: the selected vCPU is halted in govmm, its HLT exit
//	             counted; 0: it is not (or there is no vCPU i)
//
// The marker's own exits (its ports' reads and writes) are the
// instrument's and are left out of every section (accounting.VM.Mark).
type Marker struct {
	Mark func(cpu, id int)
	// Last returns the counts of the last closed section as seen by cpu;
	// nil reads as zeros.
	Last func(cpu int) SectionCounts
	// Injected returns how often vector has been injected into cpu; nil
	// reads as zeros.
	Injected func(cpu int, vector uint8) uint64
	// Halted says whether vCPU cpu is halted in govmm (its HLT exit
	// served); nil reads as 0.
	Halted func(cpu int) bool

	// vector[cpu] and halted[cpu] are cpu's selections at 0x670 and
	// 0x678. A vCPU's port exits run on its own thread, so each slot has
	// one writer and one reader: no lock.
	vector []uint8
	halted []uint32
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
const MarkerPorts = 0x1C

// NewMarker returns a marker for cpus vCPUs.
func NewMarker(cpus int, mark func(cpu, id int), last func(cpu int) SectionCounts,
	injected func(cpu int, vector uint8) uint64, halted func(cpu int) bool) *Marker {
	return &Marker{Mark: mark, Last: last, Injected: injected, Halted: halted,
		vector: make([]uint8, cpus), halted: make([]uint32, cpus)}
}

func (m *Marker) In(cpu int, port uint16, data []byte) {
	var v uint64
	switch off := port &^ 3; {
	case off == 0x670:
		if m.Injected != nil && cpu < len(m.vector) {
			v = m.Injected(cpu, m.vector[cpu]) & 0xFFFFFFFF
		}
	case off == 0x678:
		if m.Halted != nil && cpu < len(m.halted) && int(m.halted[cpu]) < len(m.halted) && m.Halted(int(m.halted[cpu])) {
			v = 1
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
	case port == 0x678 && cpu < len(m.halted):
		m.halted[cpu] = uint32(le(data))
	}
}
