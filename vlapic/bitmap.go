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

// highest returns the highest set vector.
func (v *vec256) highest() (uint8, bool) {
	for i := 7; i >= 0; i-- {
		if w := v[i]; w != 0 {
			return uint8(i*32 + bits.Len32(w) - 1), true
		}
	}
	return 0, false
}
