// This file implements BAR decoding: which BAR answers at an address of the
// MMIO or I/O window now, as an immutable snapshot rebuilt on BAR and
// command writes and searched without a lock, and the OnBARChange
// notifications that follow a rebuild.

package pci

import (
	"sort"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
)

// window is one decoding BAR.
type window struct {
	base, end uint64 // end exclusive
	f         *Function
	bar       int
}

// decodeMap lists the decoding BARs of each window, sorted by base and
// disjoint. Never modified once published.
type decodeMap struct {
	mem, io []window
}

// find returns the BAR that decodes addr, nil if none.
func find(list []window, addr uint64) *window {
	i := sort.Search(len(list), func(i int) bool { return list[i].end > addr })
	if i < len(list) && list[i].base <= addr {
		return &list[i]
	}
	return nil
}

// barEvent is one OnBARChange call to make.
type barEvent struct {
	f    *Function
	bar  int
	base uint64
	on   bool
}

// remap rebuilds the decode map from every function's BARs and command
// register and queues a notification for each BAR whose decode changed.
//
// A BAR decodes when its kind is enabled in the command register and it
// lies wholly inside its window. A BAR programmed outside the window does
// not decode (a real host bridge would not forward the cycle to bus 0), and
// BARs that overlap each other both stop decoding until the guest moves one
// (which device would answer is undefined on real hardware; here it is
// neither, so an overlap never lets one device see another's accesses).
func (b *Bus) remap() {
	b.mapMu.Lock()
	var mem, io []window
	for _, f := range b.funcs {
		f.mu.Lock()
		cmd := uint16(f.cfg[regCommand]) | uint16(f.cfg[regCommand+1])<<8
		for i, s := range f.bars {
			var list *[]window
			var lo, hi uint64
			switch {
			case (s.Kind == BARMem32 || s.Kind == BARMem64) && cmd&CmdMemory != 0:
				list, lo, hi = &mem, b.cfg.MMIOBase, b.cfg.MMIOBase+b.cfg.MMIOSize
			case s.Kind == BARIO && cmd&CmdIO != 0:
				list, lo, hi = &io, b.cfg.IOBase, b.cfg.IOBase+b.cfg.IOSize
			default:
				continue
			}
			base := f.programmed(i)
			if base < lo || base+s.Size > hi || base+s.Size < base {
				continue
			}
			*list = append(*list, window{base: base, end: base + s.Size, f: f, bar: i})
		}
		f.mu.Unlock()
	}
	m := &decodeMap{mem: dropOverlaps(mem), io: dropOverlaps(io)}
	b.decode.Store(m)

	var events []barEvent
	now := map[*Function]*[numBARs]barDecode{}
	for _, list := range [][]window{m.mem, m.io} {
		for _, w := range list {
			d := now[w.f]
			if d == nil {
				d = new([numBARs]barDecode)
				now[w.f] = d
			}
			d[w.bar] = barDecode{base: w.base, decoding: true}
		}
	}
	for _, f := range b.funcs {
		var d [numBARs]barDecode
		if p := now[f]; p != nil {
			d = *p
		}
		for i := range d {
			old := f.decoded[i]
			if d[i] != old && (d[i].decoding || old.decoding) {
				events = append(events, barEvent{f: f, bar: i, base: d[i].base, on: d[i].decoding})
				if !d[i].decoding {
					events[len(events)-1].base = old.base // where it stopped decoding
				}
			}
		}
		f.decoded = d
	}
	if len(events) > 0 {
		b.notifyMu.Lock() // under mapMu: events queue in publication order
		b.events = append(b.events, events...)
		b.notifyMu.Unlock()
	}
	b.mapMu.Unlock()
	b.notify()
}

// dropOverlaps sorts list by base and removes every BAR that overlaps
// another.
func dropOverlaps(list []window) []window {
	sort.Slice(list, func(i, j int) bool { return list[i].base < list[j].base })
	keep := make([]bool, len(list))
	for i := range list {
		keep[i] = true
	}
	var reach uint64 // furthest end so far
	last := -1       // the window that reaches there
	for i, w := range list {
		if last >= 0 && w.base < reach {
			keep[i], keep[last] = false, false
		}
		if w.end > reach || last < 0 {
			reach, last = w.end, i
		}
	}
	out := list[:0]
	for i, w := range list {
		if keep[i] {
			out = append(out, w)
		}
	}
	return out
}

// notify delivers queued BAR changes with no lock held. One thread
// delivers at a time, so callbacks see changes in the order they happened;
// a thread that finds another delivering leaves its events to it.
func (b *Bus) notify() {
	b.notifyMu.Lock()
	if b.delivering {
		b.notifyMu.Unlock()
		return
	}
	b.delivering = true
	for len(b.events) > 0 {
		evs := b.events
		b.events = nil
		b.notifyMu.Unlock()
		for _, e := range evs {
			if fn := e.f.onBARChange.Load(); fn != nil {
				(*fn)(e.bar, e.base, e.on)
			}
		}
		b.notifyMu.Lock()
	}
	b.delivering = false
	b.notifyMu.Unlock()
}

// windowHandler serves the MMIO or I/O window: an access goes to the BAR
// that decodes there, charged what the BAR says; one that hits no decoding
// BAR, or runs past its end, reads all ones, its write is ignored, and it
// is charged exitcause.PCIBAR.
func (b *Bus) windowHandler(io bool) exitbus.HandlerFunc {
	return func(a *exitbus.Access) error {
		m := b.decode.Load()
		list := m.mem
		if io {
			list = m.io
		}
		n := uint64(len(a.Data))
		w := find(list, a.Addr)
		if w == nil || n == 0 || a.Addr+n > w.end {
			if !a.Write {
				allOnes(a.Data)
			}
			a.Charge(exitcause.PCIBAR)
			return nil
		}
		a.Charge(w.f.accessBAR(w.bar, a.Addr-w.base, a.Write, a.Data))
		return nil
	}
}

// accessBAR serves an access at off inside BAR i: the MSI-X table or PBA if
// it is there, else the BAR's region (none: reads 0).
func (f *Function) accessBAR(i int, off uint64, write bool, data []byte) exitcause.Cause {
	if m := f.msix; m != nil && m.access(i, off, write, data) {
		return exitcause.MMIOMSIXTable
	}
	s := &f.bars[i]
	switch {
	case s.Region == nil && !write:
		clear(data)
	case s.Region == nil:
	case write:
		s.Region.WriteBAR(off, data)
	default:
		s.Region.ReadBAR(off, data)
	}
	if s.Cause != nil {
		return s.Cause(off, write)
	}
	return exitcause.PCIBAR
}
