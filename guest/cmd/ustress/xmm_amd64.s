#include "textflag.h"

// func xmmHold(ref *[15][16]byte, spins uint64) int64
//
// Loads X0-X14 from ref, then spins, comparing every register with ref on
// each round; returns the first register found changed (0-14), or -1.
// X15 is the scratch register and is zero again on return (ABIInternal).
TEXT ·xmmHold(SB), NOSPLIT, $0-24
	MOVQ	ref+0(FP), SI
	MOVQ	spins+8(FP), CX
	MOVOU	0(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	MOVOU	64(SI), X4
	MOVOU	80(SI), X5
	MOVOU	96(SI), X6
	MOVOU	112(SI), X7
	MOVOU	128(SI), X8
	MOVOU	144(SI), X9
	MOVOU	160(SI), X10
	MOVOU	176(SI), X11
	MOVOU	192(SI), X12
	MOVOU	208(SI), X13
	MOVOU	224(SI), X14
loop:
	MOVO	X0, X15
	PCMPEQB	0(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$0, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X1, X15
	PCMPEQB	16(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$1, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X2, X15
	PCMPEQB	32(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$2, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X3, X15
	PCMPEQB	48(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$3, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X4, X15
	PCMPEQB	64(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$4, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X5, X15
	PCMPEQB	80(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$5, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X6, X15
	PCMPEQB	96(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$6, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X7, X15
	PCMPEQB	112(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$7, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X8, X15
	PCMPEQB	128(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$8, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X9, X15
	PCMPEQB	144(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$9, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X10, X15
	PCMPEQB	160(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$10, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X11, X15
	PCMPEQB	176(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$11, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X12, X15
	PCMPEQB	192(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$12, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X13, X15
	PCMPEQB	208(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$13, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	MOVO	X14, X15
	PCMPEQB	224(SI), X15
	PMOVMSKB	X15, DX
	MOVQ	$14, AX
	CMPL	DX, $0xFFFF
	JNE	bad
	DECQ	CX
	JNZ	loop
	MOVQ	$-1, AX
bad:
	XORPS	X15, X15
	MOVQ	AX, ret+16(FP)
	RET

// func gprHold(seed uint64, spins uint64) int64
//
// Fills RAX, RBX, RDX, RSI, RDI, R8-R15 and RBP with values derived from
// seed and spins, checking on every round that each still holds its value
// and that RSP has not moved; returns the first register found changed
// (0 RBX, 1 RDX, 2 RSI, 3 RDI, 4 R8 ... 11 R15, 12 RBP, 13 RSP, 14 RAX),
// or -1. RCX counts the rounds. The frame saves BP and the callee registers
// Go expects back.
TEXT ·gprHold(SB), NOSPLIT, $8-24
	MOVQ	BP, 0(SP)
	MOVQ	seed+0(FP), AX
	MOVQ	spins+8(FP), CX
	MOVQ	SP, X0          // RSP as it must stay
	MOVQ	AX, BX
	ADDQ	$1, BX
	MOVQ	AX, DX
	ADDQ	$2, DX
	MOVQ	AX, SI
	ADDQ	$3, SI
	MOVQ	AX, DI
	ADDQ	$4, DI
	MOVQ	AX, R8
	ADDQ	$5, R8
	MOVQ	AX, R9
	ADDQ	$6, R9
	MOVQ	AX, R10
	ADDQ	$7, R10
	MOVQ	AX, R11
	ADDQ	$8, R11
	MOVQ	AX, R12
	ADDQ	$9, R12
	MOVQ	AX, R13
	ADDQ	$10, R13
	MOVQ	AX, R14
	ADDQ	$11, R14
	MOVQ	AX, R15
	ADDQ	$12, R15
	MOVQ	AX, BP
	ADDQ	$13, BP
	MOVQ	AX, X1          // seed, to check against
gloop:
	MOVQ	X1, AX
	// each register minus its offset must equal the seed
	SUBQ	$1, BX
	CMPQ	BX, AX
	JNE	gbad0
	ADDQ	$1, BX
	SUBQ	$2, DX
	CMPQ	DX, AX
	JNE	gbad1
	ADDQ	$2, DX
	SUBQ	$3, SI
	CMPQ	SI, AX
	JNE	gbad2
	ADDQ	$3, SI
	SUBQ	$4, DI
	CMPQ	DI, AX
	JNE	gbad3
	ADDQ	$4, DI
	SUBQ	$5, R8
	CMPQ	R8, AX
	JNE	gbad4
	ADDQ	$5, R8
	SUBQ	$6, R9
	CMPQ	R9, AX
	JNE	gbad5
	ADDQ	$6, R9
	SUBQ	$7, R10
	CMPQ	R10, AX
	JNE	gbad6
	ADDQ	$7, R10
	SUBQ	$8, R11
	CMPQ	R11, AX
	JNE	gbad7
	ADDQ	$8, R11
	SUBQ	$9, R12
	CMPQ	R12, AX
	JNE	gbad8
	ADDQ	$9, R12
	SUBQ	$10, R13
	CMPQ	R13, AX
	JNE	gbad9
	ADDQ	$10, R13
	SUBQ	$11, R14
	CMPQ	R14, AX
	JNE	gbad10
	ADDQ	$11, R14
	SUBQ	$12, R15
	CMPQ	R15, AX
	JNE	gbad11
	ADDQ	$12, R15
	SUBQ	$13, BP
	CMPQ	BP, AX
	JNE	gbad12
	ADDQ	$13, BP
	MOVQ	X0, AX
	CMPQ	SP, AX
	JNE	gbad13
	DECQ	CX
	JNZ	gloop
	MOVQ	$-1, AX
	JMP	gdone
gbad0:
	MOVQ	$0, AX
	JMP	gdone
gbad1:
	MOVQ	$1, AX
	JMP	gdone
gbad2:
	MOVQ	$2, AX
	JMP	gdone
gbad3:
	MOVQ	$3, AX
	JMP	gdone
gbad4:
	MOVQ	$4, AX
	JMP	gdone
gbad5:
	MOVQ	$5, AX
	JMP	gdone
gbad6:
	MOVQ	$6, AX
	JMP	gdone
gbad7:
	MOVQ	$7, AX
	JMP	gdone
gbad8:
	MOVQ	$8, AX
	JMP	gdone
gbad9:
	MOVQ	$9, AX
	JMP	gdone
gbad10:
	MOVQ	$10, AX
	JMP	gdone
gbad11:
	MOVQ	$11, AX
	JMP	gdone
gbad12:
	MOVQ	$12, AX
	JMP	gdone
gbad13:
	MOVQ	X0, SP          // put RSP back before using the frame
	MOVQ	$13, AX
gdone:
	MOVQ	0(SP), BP
	XORPS	X15, X15
	MOVQ	AX, ret+16(FP)
	RET
