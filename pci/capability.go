// This file implements the capability list (PCI 3.0 §6.7): status bit 4,
// the pointer at 0x34, and capabilities chained from 0x40 upwards.

package pci

import "fmt"

// CapHook serves a capability whose body is not plain read-only bytes.
// Both methods are called on the vCPU thread of the access with no pci lock
// held, possibly on several threads at once: the hook guards its own state.
// off counts from the capability's start (the ID byte); data covers only
// bytes of the body (offset 2 onwards), never the ID and next pointer,
// which stay read-only.
type CapHook interface {
	// ReadCap may change data, which holds the stored bytes.
	ReadCap(off int, data []byte)
	// WriteCap decides what the write changes: it may call
	// Function.SetCapBytes, or keep its own state and answer in ReadCap.
	WriteCap(off int, data []byte)
}

// capability is one entry of the list.
type capability struct {
	id   uint8
	off  int // of the ID byte
	len  int // header and body
	hook CapHook
}

// AddCapability appends a capability with the given ID and body (the bytes
// after the ID and next pointer) and returns its offset. Capabilities are
// placed dword-aligned from 0x40, so an access never spans two of them.
// hook nil makes the body read-only.
func (f *Function) AddCapability(id uint8, body []byte, hook CapHook) (int, error) {
	if f.bus != nil {
		return 0, errAdded
	}
	off := f.capNext
	n := capHeaderLength + len(body)
	if off+n > cfgSize {
		return 0, fmt.Errorf("pci: capability %#x (%d bytes) does not fit in configuration space at %#x", id, n, off)
	}
	f.cfg[off] = id
	f.cfg[off+1] = 0 // end of list
	copy(f.cfg[off+capHeaderLength:], body)
	if len(f.caps) == 0 {
		f.cfg[regCapPtr] = byte(off)
		f.cfg[regStatus] |= statusCapList
	} else {
		f.cfg[f.caps[len(f.caps)-1].off+1] = byte(off)
	}
	f.caps = append(f.caps, capability{id: id, off: off, len: n, hook: hook})
	f.capNext = (off + n + 3) &^ 3
	return off, nil
}

// capBody finds the hooked capability whose body overlaps the access of n
// bytes at off, and the overlapping part [lo, hi).
func (f *Function) capBody(off, n int) (c *capability, lo, hi int) {
	for i := range f.caps {
		c := &f.caps[i]
		if c.hook == nil {
			continue
		}
		lo, hi := max(off, c.off+capHeaderLength), min(off+n, c.off+c.len)
		if lo < hi {
			return c, lo, hi
		}
	}
	return nil, 0, 0
}
