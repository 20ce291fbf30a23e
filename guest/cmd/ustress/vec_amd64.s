#include "textflag.h"

// Holds of the vector state that FXSAVE does not cover (vec.go): the upper
// halves of YMM0-15, ZMM0-31 whole, and the opmask registers. Both holds
// share one shape: SI is the reference, DX the rounds to spin, CX the
// round (from 1), DI the round after whose checks the registers are
// reloaded from R8 (the tests' poke; 0 never), BX where the registers are
// loaded from, and AX the register found changed (-1 none).

// YLOAD loads YMM0-15 from base (ymmRegs).
#define YLOAD(base) \
	VMOVDQU	0(base), Y0; \
	VMOVDQU	32(base), Y1; \
	VMOVDQU	64(base), Y2; \
	VMOVDQU	96(base), Y3; \
	VMOVDQU	128(base), Y4; \
	VMOVDQU	160(base), Y5; \
	VMOVDQU	192(base), Y6; \
	VMOVDQU	224(base), Y7; \
	VMOVDQU	256(base), Y8; \
	VMOVDQU	288(base), Y9; \
	VMOVDQU	320(base), Y10; \
	VMOVDQU	352(base), Y11; \
	VMOVDQU	384(base), Y12; \
	VMOVDQU	416(base), Y13; \
	VMOVDQU	448(base), Y14; \
	VMOVDQU	480(base), Y15

// YCHECK compares reg with its reference at off(SI) and jumps to ybad with
// AX = n if they differ. There is no spare register to compare into (all
// sixteen are held), so it XORs the reference in (zero if equal), tests
// for zero and XORs it out again; VXORPS and VPTEST are AVX, not AVX2.
#define YCHECK(reg, off, n) \
	VXORPS	off(SI), reg, reg; \
	VPTEST	reg, reg; \
	VXORPS	off(SI), reg, reg; \
	MOVQ	$n, AX; \
	JNE	ybad

// func ymmHold(ref *ymmRegs, spins uint64, poke *ymmRegs, pokeAt uint64) (changed int64, round uint64)
TEXT ·ymmHold(SB), NOSPLIT, $0-48
	MOVQ	ref+0(FP), SI
	MOVQ	spins+8(FP), DX
	MOVQ	poke+16(FP), R8
	MOVQ	pokeAt+24(FP), DI
	MOVQ	$1, CX
	MOVQ	SI, BX
yload:
	YLOAD(BX)
yloop:
	YCHECK(Y0, 0, 0)
	YCHECK(Y1, 32, 1)
	YCHECK(Y2, 64, 2)
	YCHECK(Y3, 96, 3)
	YCHECK(Y4, 128, 4)
	YCHECK(Y5, 160, 5)
	YCHECK(Y6, 192, 6)
	YCHECK(Y7, 224, 7)
	YCHECK(Y8, 256, 8)
	YCHECK(Y9, 288, 9)
	YCHECK(Y10, 320, 10)
	YCHECK(Y11, 352, 11)
	YCHECK(Y12, 384, 12)
	YCHECK(Y13, 416, 13)
	YCHECK(Y14, 448, 14)
	YCHECK(Y15, 480, 15)
	CMPQ	CX, DX
	JAE	yok
	CMPQ	CX, DI
	LEAQ	1(CX), CX // LEAQ keeps the flags of the CMPQ
	JNE	yloop
	MOVQ	R8, BX
	JMP	yload
yok:
	MOVQ	$-1, AX
ybad:
	VZEROUPPER // Go code runs SSE: no dirty upper halves behind us
	XORPS	X15, X15 // zero on return (ABIInternal)
	MOVQ	AX, changed+32(FP)
	MOVQ	CX, round+40(FP)
	RET

// ZLOAD loads ZMM0-31 from base (zmmRegs.z).
#define ZLOAD(base) \
	VMOVDQU64	0(base), Z0; \
	VMOVDQU64	64(base), Z1; \
	VMOVDQU64	128(base), Z2; \
	VMOVDQU64	192(base), Z3; \
	VMOVDQU64	256(base), Z4; \
	VMOVDQU64	320(base), Z5; \
	VMOVDQU64	384(base), Z6; \
	VMOVDQU64	448(base), Z7; \
	VMOVDQU64	512(base), Z8; \
	VMOVDQU64	576(base), Z9; \
	VMOVDQU64	640(base), Z10; \
	VMOVDQU64	704(base), Z11; \
	VMOVDQU64	768(base), Z12; \
	VMOVDQU64	832(base), Z13; \
	VMOVDQU64	896(base), Z14; \
	VMOVDQU64	960(base), Z15; \
	VMOVDQU64	1024(base), Z16; \
	VMOVDQU64	1088(base), Z17; \
	VMOVDQU64	1152(base), Z18; \
	VMOVDQU64	1216(base), Z19; \
	VMOVDQU64	1280(base), Z20; \
	VMOVDQU64	1344(base), Z21; \
	VMOVDQU64	1408(base), Z22; \
	VMOVDQU64	1472(base), Z23; \
	VMOVDQU64	1536(base), Z24; \
	VMOVDQU64	1600(base), Z25; \
	VMOVDQU64	1664(base), Z26; \
	VMOVDQU64	1728(base), Z27; \
	VMOVDQU64	1792(base), Z28; \
	VMOVDQU64	1856(base), Z29; \
	VMOVDQU64	1920(base), Z30; \
	VMOVDQU64	1984(base), Z31

// KLOAD loads K1-K7 from base (zmmRegs.k at 2048) with kmov: KMOVQ (all
// 64 bits, AVX512BW) or KMOVW (16 bits, AVX512F alone).
#define KLOAD(kmov, base) \
	kmov	2048(base), K1; \
	kmov	2056(base), K2; \
	kmov	2064(base), K3; \
	kmov	2072(base), K4; \
	kmov	2080(base), K5; \
	kmov	2088(base), K6; \
	kmov	2096(base), K7

// ZCHECK compares reg with its reference at off(SI) dword by dword into
// K0 (the scratch: it is not held) and jumps to zbad with AX = n unless
// all 16 dwords are equal (KORTESTW sets CF when K0 is all ones).
#define ZCHECK(reg, off, n) \
	VPCMPEQD	off(SI), reg, K0; \
	KORTESTW	K0, K0; \
	MOVQ	$n, AX; \
	JCC	zbad

// KCHECK compares reg, read with kmov, with its reference at off(SI) and
// jumps to zbad with AX = n if they differ.
#define KCHECK(kmov, reg, off, n) \
	kmov	reg, R9; \
	CMPQ	R9, off(SI); \
	MOVQ	$n, AX; \
	JNE	zbad

#define KCHECKALL(kmov) \
	KCHECK(kmov, K1, 2048, 32); \
	KCHECK(kmov, K2, 2056, 33); \
	KCHECK(kmov, K3, 2064, 34); \
	KCHECK(kmov, K4, 2072, 35); \
	KCHECK(kmov, K5, 2080, 36); \
	KCHECK(kmov, K6, 2088, 37); \
	KCHECK(kmov, K7, 2096, 38)

// func zmmHold(ref *zmmRegs, spins uint64, poke *zmmRegs, pokeAt uint64, wideK bool) (changed int64, round uint64)
TEXT ·zmmHold(SB), NOSPLIT, $0-56
	MOVQ	ref+0(FP), SI
	MOVQ	spins+8(FP), DX
	MOVQ	poke+16(FP), R8
	MOVQ	pokeAt+24(FP), DI
	MOVBLZX	wideK+32(FP), R10
	MOVQ	$1, CX
	MOVQ	SI, BX
zload:
	ZLOAD(BX)
	TESTQ	R10, R10
	JZ	zloadw
	KLOAD(KMOVQ, BX)
	JMP	zloop
zloadw:
	KLOAD(KMOVW, BX)
zloop:
	ZCHECK(Z0, 0, 0)
	ZCHECK(Z1, 64, 1)
	ZCHECK(Z2, 128, 2)
	ZCHECK(Z3, 192, 3)
	ZCHECK(Z4, 256, 4)
	ZCHECK(Z5, 320, 5)
	ZCHECK(Z6, 384, 6)
	ZCHECK(Z7, 448, 7)
	ZCHECK(Z8, 512, 8)
	ZCHECK(Z9, 576, 9)
	ZCHECK(Z10, 640, 10)
	ZCHECK(Z11, 704, 11)
	ZCHECK(Z12, 768, 12)
	ZCHECK(Z13, 832, 13)
	ZCHECK(Z14, 896, 14)
	ZCHECK(Z15, 960, 15)
	ZCHECK(Z16, 1024, 16)
	ZCHECK(Z17, 1088, 17)
	ZCHECK(Z18, 1152, 18)
	ZCHECK(Z19, 1216, 19)
	ZCHECK(Z20, 1280, 20)
	ZCHECK(Z21, 1344, 21)
	ZCHECK(Z22, 1408, 22)
	ZCHECK(Z23, 1472, 23)
	ZCHECK(Z24, 1536, 24)
	ZCHECK(Z25, 1600, 25)
	ZCHECK(Z26, 1664, 26)
	ZCHECK(Z27, 1728, 27)
	ZCHECK(Z28, 1792, 28)
	ZCHECK(Z29, 1856, 29)
	ZCHECK(Z30, 1920, 30)
	ZCHECK(Z31, 1984, 31)
	TESTQ	R10, R10
	JZ	zcheckw
	KCHECKALL(KMOVQ)
	JMP	znext
zcheckw:
	KCHECKALL(KMOVW)
znext:
	CMPQ	CX, DX
	JAE	zok
	CMPQ	CX, DI
	LEAQ	1(CX), CX // LEAQ keeps the flags of the CMPQ
	JNE	zloop
	MOVQ	R8, BX
	JMP	zload
zok:
	MOVQ	$-1, AX
zbad:
	VZEROUPPER // upper halves of ZMM0-15 (ZMM16-31 and K are not Go's)
	XORPS	X15, X15 // zero on return (ABIInternal)
	MOVQ	AX, changed+40(FP)
	MOVQ	CX, round+48(FP)
	RET
