// This file implements Save and Restore: the remapping unit's whole state
// as a value a snapshot carries to another process, and back.

package vintremap

import "fmt"

// Saved is the remapping unit's state in a snapshot: its registers as
// written and as latched (the table and queue in force), the queue's head
// and tail (descriptors queued and not yet fetched stay queued), the
// fault records and the counters.
type Saved struct {
	ECAP     uint64 // the unit's capabilities: must be the restoring unit's
	GSTS     uint32
	IRTAReg  uint64
	IRTAddr  uint64
	IRTSize  uint32
	IRTEIME  bool
	IQAReg   uint64
	IQAddr   uint64
	IQSize   uint32
	IQH, IQT uint32
	ICS      uint32
	FSTS     uint32
	FECTL    uint32
	FEDATA   uint32
	FEADDR   uint32
	FEUADDR  uint32
	IECTL    uint32
	IEDATA   uint32
	IEADDR   uint32
	IEUADDR  uint32
	FR       [NumFR][2]uint64 // each fault-recording register: low, high
	NextFR   int
	Stats    Counters
}

// Save returns the unit's state. The devices and vCPUs that use it must
// be paused (the caller's VM is).
func (u *Unit) Save() Saved {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := Saved{ECAP: u.ecap, GSTS: u.gsts, IRTAReg: u.irtaReg, IRTAddr: u.irt.addr, IRTSize: u.irt.entries, IRTEIME: u.irt.eime,
		IQAReg: u.iqaReg, IQAddr: u.iq.addr, IQSize: u.iq.size, IQH: u.iqh, IQT: u.iqt, ICS: u.ics, FSTS: u.fsts,
		FECTL: u.fectl, FEDATA: u.fedata, FEADDR: u.feaddr, FEUADDR: u.feuaddr,
		IECTL: u.iectl, IEDATA: u.iedata, IEADDR: u.ieaddr, IEUADDR: u.ieuaddr, NextFR: u.nextFR, Stats: u.stats}
	for i, r := range u.fr {
		s.FR[i] = [2]uint64{r.lo, r.hi}
	}
	return s
}

// Restore makes the unit's state s. A state from a unit with other
// capabilities (extended interrupt mode on one side only), or one no unit
// can be in, is refused and the unit left as it was.
func (u *Unit) Restore(s Saved) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case s.ECAP != u.ecap:
		return fmt.Errorf("remapping unit: capabilities %#x, this unit's are %#x", s.ECAP, u.ecap)
	case s.NextFR < 0 || s.NextFR >= NumFR:
		return fmt.Errorf("remapping unit: fault record %d of %d", s.NextFR, NumFR)
	case s.IQSize != 0 && (s.IQH >= s.IQSize || s.IQT >= s.IQSize):
		return fmt.Errorf("remapping unit: queue head %d, tail %d in a queue of %d descriptors", s.IQH, s.IQT, s.IQSize)
	}
	u.gsts, u.irtaReg, u.irt = s.GSTS, s.IRTAReg, table{addr: s.IRTAddr, entries: s.IRTSize, eime: s.IRTEIME}
	u.iqaReg, u.iq, u.iqh, u.iqt = s.IQAReg, queue{addr: s.IQAddr, size: s.IQSize}, s.IQH, s.IQT
	u.ics, u.fsts = s.ICS, s.FSTS
	u.fectl, u.fedata, u.feaddr, u.feuaddr = s.FECTL, s.FEDATA, s.FEADDR, s.FEUADDR
	u.iectl, u.iedata, u.ieaddr, u.ieuaddr = s.IECTL, s.IEDATA, s.IEADDR, s.IEUADDR
	for i, r := range s.FR {
		u.fr[i] = record{lo: r[0], hi: r[1]}
	}
	u.nextFR, u.stats = s.NextFR, s.Stats
	return nil
}
