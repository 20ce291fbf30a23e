// This file implements the Bus: the set of LAPICs of one VM, its options and
// the hooks (Sink, EOI handler) through which the LAPICs talk to the VMM.

package vlapic

import (
	"sync"
	"sync/atomic"
)

// Bus holds the n LAPICs of a VM and routes Messages between them.
type Bus struct {
	clock  Clock
	sink   Sink
	busHz  uint64
	tscHz  uint64
	x2apic bool
	avic   bool // Options.AVIC; fixed for the Bus's life

	obs Observer // Options.Observer, or NopObserver; fixed

	physAddrBits int // Options.PhysAddrBits; fixed

	lapics []LAPIC

	// routes is replaced whole (copy-on-write) by rebuild; Deliver loads it
	// once. rebuildMu serialises rebuilds so the last one sees every change.
	routes    atomic.Pointer[routes]
	rebuildMu sync.Mutex

	eoi atomic.Pointer[func(vector uint8)]
}

// NewBus returns a Bus of n LAPICs in their power-on state: CPU i has APIC ID
// i, CPU 0 is the BSP. A zero opts.BusHz or opts.TSCHz means 1 GHz. A nil
// sink drops notifications; a nil clock stands still at 0.
func NewBus(n int, clock Clock, sink Sink, opts Options) *Bus {
	if n < 1 {
		panic("vlapic: NewBus needs at least one CPU")
	}
	if clock == nil {
		clock = stoppedClock{}
	}
	if sink == nil {
		sink = nopSink{}
	}
	b := &Bus{
		clock:        clock,
		sink:         sink,
		busHz:        opts.BusHz,
		tscHz:        opts.TSCHz,
		x2apic:       opts.X2APIC,
		physAddrBits: opts.PhysAddrBits,
		avic:         opts.AVIC,
		obs:          opts.Observer,
		lapics:       make([]LAPIC, n),
	}
	if b.obs == nil {
		b.obs = NopObserver{}
	}
	if b.busHz == 0 {
		b.busHz = 1e9
	}
	if b.tscHz == 0 {
		b.tscHz = 1e9
	}
	for i := range b.lapics {
		a := &b.lapics[i]
		a.bus = b
		a.cpu = i
		a.base = DefaultBase | BaseEN
		if i == 0 {
			a.base |= BaseBSP
		}
		a.mode = ModeXAPIC
		a.xid = uint8(i)
		a.resetLocked()
		a.publishLocked()
	}
	b.rebuild()
	return b
}

// Len returns the number of LAPICs.
func (b *Bus) Len() int { return len(b.lapics) }

// LAPIC returns CPU cpu's LAPIC.
func (b *Bus) LAPIC(cpu int) *LAPIC { return &b.lapics[cpu] }

// SetEOIHandler sets the function called, with no lock held, when a guest
// EOIs a vector whose TMR bit was set (a level-triggered interrupt). nil
// removes it.
func (b *Bus) SetEOIHandler(h func(vector uint8)) {
	if h == nil {
		b.eoi.Store(nil)
		return
	}
	b.eoi.Store(&h)
}

type stoppedClock struct{}

func (stoppedClock) Now() int64  { return 0 }
func (stoppedClock) TSC() uint64 { return 0 }

type nopSink struct{}

func (nopSink) Notify(int) {}
