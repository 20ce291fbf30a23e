// This file implements the 256-bit vector bitmaps behind IRR, ISR and TMR,
// laid out as the eight 32-bit registers of the xAPIC page.

package vlapic

import "math/bits"

type vec256 [8]uint32

func (v *vec256) set(n uint8)       { v[n>>5] |= 1 << (n & 31) }
func (v *vec256) clear(n uint8)     { v[n>>5] &^= 1 << (n & 31) }
func (v *vec256) test(n uint8) bool { return v[n>>5]&(1<<(n&31)) != 0 }
func (v *vec256) put(n uint8, b bool) {
	if b {
		v.set(n)
	} else {
		v.clear(n)
	}
}

// highest returns the highest set vector. An empty bitmap, what ISR and
// IRR mostly are when PPR is recomputed, is one OR of its words; a set one
// is searched 64 bits at a time.
func (v *vec256) highest() (uint8, bool) {
	if v[0]|v[1]|v[2]|v[3]|v[4]|v[5]|v[6]|v[7] == 0 {
		return 0, false
	}
	for i := 6; i >= 0; i -= 2 {
		if w := uint64(v[i+1])<<32 | uint64(v[i]); w != 0 {
			return uint8(i*32 + bits.Len64(w) - 1), true
		}
	}
	return 0, false
}
