package virtio

// This file is the only one that uses unsafe: the ring words the driver
// and the device both write (avail idx, used idx, used_event, avail_event)
// are accessed with sync/atomic so that a device goroutine and a vCPU (or,
// in tests, a fake driver goroutine) agree on their order. sync/atomic has
// no 16-bit operations, so a 16-bit field is accessed through the aligned
// 32-bit word that holds it. Guest RAM is mapped page-aligned, so that
// word never crosses a page; the queue slices its rings with enough slack
// (ringSlice) that the word is always inside the slice it has.

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// word16 returns the aligned 32-bit word of b holding b[off:off+2] and the
// field's bit shift in it, or nil if b[off] is odd-aligned or the word is
// not all inside b.
func word16(b []byte, off int) (*uint32, uint) {
	a := uintptr(unsafe.Pointer(&b[off]))
	start := off - int(a&3)
	if a&1 != 0 || start < 0 || start+4 > len(b) {
		return nil, 0
	}
	return (*uint32)(unsafe.Pointer(&b[start])), uint(a&3) * 8
}

// load16 reads the little-endian 16-bit field at b[off] atomically.
func load16(b []byte, off int) uint16 {
	w, sh := word16(b, off)
	if w == nil {
		return binary.LittleEndian.Uint16(b[off:])
	}
	return uint16(atomic.LoadUint32(w) >> sh)
}

// store16 writes the 16-bit field at b[off] atomically without disturbing
// the other half of its word (which the driver may be writing: hence the
// compare-and-swap loop rather than a read-modify-write).
func store16(b []byte, off int, v uint16) {
	w, sh := word16(b, off)
	if w == nil {
		binary.LittleEndian.PutUint16(b[off:], v)
		return
	}
	for {
		old := atomic.LoadUint32(w)
		nw := old&^(0xFFFF<<sh) | uint32(v)<<sh
		if atomic.CompareAndSwapUint32(w, old, nw) {
			return
		}
	}
}

// store32 stores the 32-bit word at b[off] atomically where it is
// 4-aligned in host memory (else with a plain store).
func store32(b []byte, off int, v uint32) {
	p := unsafe.Pointer(&b[off])
	if uintptr(p)&3 != 0 {
		binary.LittleEndian.PutUint32(b[off:], v)
		return
	}
	atomic.StoreUint32((*uint32)(p), v)
}

// within reports whether inner lies inside outer's bytes (for tests that
// check a chain's buffers are inside guest memory).
func within(outer, inner []byte) bool {
	if len(inner) == 0 {
		return true
	}
	o := uintptr(unsafe.Pointer(unsafe.SliceData(outer)))
	i := uintptr(unsafe.Pointer(unsafe.SliceData(inner)))
	return i >= o && i+uintptr(len(inner)) <= o+uintptr(len(outer))
}
