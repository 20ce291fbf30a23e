#include "textflag.h"

// func CPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·CPUID(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func XGETBV0() uint64
TEXT ·XGETBV0(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func SaveBoth(std, cmp *byte, rfbm uint64)
TEXT ·SaveBoth(SB), NOSPLIT, $0-24
	MOVQ std+0(FP), DI
	MOVQ cmp+8(FP), SI
	MOVQ rfbm+16(FP), AX
	MOVQ AX, DX
	SHRQ $32, DX
	XSAVE64 (DI)
	XSAVEC64 (SI)
	RET

// func RestoreSave(area, std, scratch *byte, rfbm uint64)
TEXT ·RestoreSave(SB), NOSPLIT, $0-32
	MOVQ area+0(FP), SI
	MOVQ std+8(FP), DI
	MOVQ scratch+16(FP), BX
	MOVQ rfbm+24(FP), AX
	MOVQ AX, DX
	SHRQ $32, DX
	XSAVE64 (BX)
	XRSTOR64 (SI)
	XSAVE64 (DI)
	XRSTOR64 (BX)
	RET
