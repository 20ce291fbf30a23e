#include "textflag.h"

// func cmpxchg16b(p *byte, oldLo, oldHi, newLo, newHi uint64) (curLo, curHi uint64, ok bool)
// A real LOCK CMPXCHG16B on the guest's memory (mapped in govmm), so the
// completion stays atomic against the other vCPUs.
TEXT ·cmpxchg16b(SB),NOSPLIT,$0-57
	MOVQ p+0(FP), DI
	MOVQ oldLo+8(FP), AX
	MOVQ oldHi+16(FP), DX
	MOVQ newLo+24(FP), BX
	MOVQ newHi+32(FP), CX
	LOCK
	CMPXCHG16B (DI)
	SETEQ R8
	MOVQ AX, curLo+40(FP)
	MOVQ DX, curHi+48(FP)
	MOVB R8, ok+56(FP)
	RET
