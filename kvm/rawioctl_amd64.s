#include "textflag.h"

// func rawIoctl(fd, req uintptr, arg unsafe.Pointer) (errno uintptr)
//
// One ioctl(2) with no entersyscall, as unix.RawSyscall makes it, in the
// few instructions it takes: the exit path's KVM_RUN and KVM_INTERRUPT
// otherwise run through three packages' wrappers (x/sys/unix, syscall,
// internal/runtime/syscall), each on a code page of its own, three pages
// more at every exit in the nested AMD-V host (docs/exit-cost.md). Here it
// shares the package's assembly with RDTSC, which every exit runs anyway.
// NOSPLIT with no frame: the stack cannot move while the kernel holds
// arg's address, and an assembly function is never a preemption point.
TEXT ·rawIoctl(SB),NOSPLIT,$0-32
	MOVQ	fd+0(FP), DI
	MOVQ	req+8(FP), SI
	MOVQ	arg+16(FP), DX
	MOVQ	$16, AX // SYS_ioctl
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	NEGQ	AX
	MOVQ	AX, errno+24(FP)
	RET
ok:
	MOVQ	$0, errno+24(FP)
	RET
