// This file declares CMPXCHG16B (cmpxchg16b_amd64.s), which completing
// a guest's CMPXCHG16B on guest RAM needs atomically.

package complete

// cmpxchg16b compares the 16 bytes at p (16-byte aligned) with old and, if
// equal, stores new; it returns what was there.
//
//go:noescape
func cmpxchg16b(p *byte, oldLo, oldHi, newLo, newHi uint64) (curLo, curHi uint64, ok bool)
