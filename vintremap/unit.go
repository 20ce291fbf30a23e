// This file holds the unit's state and the plumbing shared by the register,
// translation and queue code.

package vintremap

import "sync"

// Unit is one interrupt-remapping unit. Create it with New.
type Unit struct {
	mu  sync.Mutex
	mem Memory
	irq Interrupter

	ecap uint64
	gsts uint32

	irtaReg uint64 // IRTA as written; takes effect at SIRTP
	irt     table  // latched by SIRTP

	iqaReg uint64 // IQA as written; takes effect when QI is enabled
	iq     queue  // latched by QIE
	iqh    uint32 // descriptor index of the next fetch
	iqt    uint32 // descriptor index software wrote

	ics             uint32
	fsts            uint32 // PFO, IQE, FRI; PPF is computed
	fectl, fedata   uint32
	feaddr, feuaddr uint32
	iectl, iedata   uint32
	ieaddr, ieuaddr uint32
	fr              [NumFR]record
	nextFR          int
	buf             [16]byte // IRTE / descriptor scratch: no allocation per access
	stats           Counters
}

// table is the interrupt-remapping table in force.
type table struct {
	addr    uint64
	entries uint32
	eime    bool
}

// queue is the invalidation queue in force.
type queue struct {
	addr uint64
	size uint32 // descriptors
}

// record is one fault-recording register, raw: lo holds FI (the interrupt
// index in 63:48), hi the SID (15:0), the reason (39:32) and F (63).
type record struct{ lo, hi uint64 }

const frF = 1 << 63

// New returns a unit in its reset state: everything disabled, fault and
// completion events masked.
func New(mem Memory, irq Interrupter, opts Options) *Unit {
	return &Unit{
		mem:   mem,
		irq:   irq,
		ecap:  ECAP(opts),
		irt:   table{entries: 2},
		iq:    queue{size: 256},
		fectl: CtlIM,
		iectl: CtlIM,
	}
}

// Enabled reports whether interrupt remapping is on (GSTS.IRES).
func (u *Unit) Enabled() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.gsts&gIRE != 0
}

// post collects the MSIs an operation raises, to send once the lock is
// dropped. One operation raises at most a fault event and a completion event.
type post struct {
	n   int
	msi [2]struct {
		addr uint64
		data uint32
	}
}

func (p *post) add(upper, lower, data uint32) {
	if p.n < len(p.msi) {
		p.msi[p.n].addr = uint64(upper)<<32 | uint64(lower)
		p.msi[p.n].data = data
		p.n++
	}
}

func (p *post) flush(irq Interrupter) {
	for i := range p.n {
		irq.MSI(p.msi[i].addr, p.msi[i].data)
	}
}

// unlock drops the lock and sends what the operation raised.
func (u *Unit) unlock(p *post) {
	u.mu.Unlock()
	if p.n > 0 && u.irq != nil {
		p.flush(u.irq)
	}
}
