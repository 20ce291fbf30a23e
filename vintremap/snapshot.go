// This file implements Snapshot: a consistent value copy of the unit for the
// dashboard, the accounting and debugging.

package vintremap

// Counters count what the unit did since New.
type Counters struct {
	Translations       uint64             // interrupts remapped through an IRTE
	Passthrough        uint64             // compatibility-format interrupts passed as is
	Faults             [NumReasons]uint64 // refused requests, by reason: Faults[r-0x20]
	FaultsSuppressed   uint64             // not recorded: FPD
	FaultsLost         uint64             // not recorded: fault-recording overflow (PFO)
	FaultEvents        uint64             // fault-event conditions (sent or left pending)
	IECInvalidations   uint64             // interrupt-entry-cache descriptors
	OtherInvalidations uint64             // context-cache and IOTLB descriptors (no-ops)
	WaitDescriptors    uint64
	CompletionEvents   uint64 // ICS.IWC set by a wait descriptor with IF
	QueueErrors        uint64 // FSTS.IQE raised
}

// FaultRecord is one fault-recording register.
type FaultRecord struct {
	Pending bool // F
	Fault
}

// Table is the interrupt-remapping table latched by the last SIRTP.
type Table struct {
	Addr    uint64
	Entries uint32
	EIME    bool // 32-bit x2APIC destinations
}

// State is a copy of the unit at one instant: registers as software reads
// them, the latched table and queue, and the counters.
type State struct {
	CAP, ECAP               uint64
	GSTS                    uint32
	IRTA                    uint64
	Table                   Table
	IQA                     uint64
	QueueAddr               uint64 // latched when QI was enabled
	QueueSize               uint32 // descriptors
	IQH, IQT                uint64
	ICS                     uint32
	FSTS, FECTL             uint32
	FEDATA, FEADDR, FEUADDR uint32
	IECTL                   uint32
	IEDATA, IEADDR, IEUADDR uint32
	FaultRecords            [NumFR]FaultRecord
	Counters                Counters
}

// Snapshot returns a copy of the unit's state.
func (u *Unit) Snapshot() State {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := State{
		CAP:       CAP,
		ECAP:      u.ecap,
		GSTS:      u.gsts,
		IRTA:      u.irtaReg,
		Table:     Table{Addr: u.irt.addr, Entries: u.irt.entries, EIME: u.irt.eime},
		IQA:       u.iqaReg,
		QueueAddr: u.iq.addr,
		QueueSize: u.iq.size,
		IQH:       uint64(u.iqh) << 4,
		IQT:       uint64(u.iqt) << 4,
		ICS:       u.ics,
		FSTS:      u.fstsValue(),
		FECTL:     u.fectl,
		FEDATA:    u.fedata,
		FEADDR:    u.feaddr,
		FEUADDR:   u.feuaddr,
		IECTL:     u.iectl,
		IEDATA:    u.iedata,
		IEADDR:    u.ieaddr,
		IEUADDR:   u.ieuaddr,
		Counters:  u.stats,
	}
	for i, r := range u.fr {
		s.FaultRecords[i] = FaultRecord{
			Pending: r.hi&frF != 0,
			Fault:   Fault{Reason: uint8(r.hi >> 32), Index: uint16(r.lo >> 48), SID: uint16(r.hi)},
		}
	}
	return s
}
