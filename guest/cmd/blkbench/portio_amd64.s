#include "textflag.h"

// func outl(port uint16, v uint32)
//
// A 32-bit OUT: port I/O from user space, allowed by ioperm(2) for the
// calling thread only.
TEXT ·outl(SB), NOSPLIT, $0-8
	MOVW	port+0(FP), DX
	MOVL	v+4(FP), AX
	OUTL
	RET

// func inl(port uint16) uint32
TEXT ·inl(SB), NOSPLIT, $0-12
	MOVW	port+0(FP), DX
	INL
	MOVL	AX, ret+8(FP)
	RET
