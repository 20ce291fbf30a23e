#include "textflag.h"

// The two system calls an IPI's sender makes, with no entersyscall (they
// never sleep), in the few instructions they take: through
// unix.RawSyscall they ran three packages' wrappers (x/sys/unix, syscall,
// internal/runtime/syscall), each on a code page of its own, three pages
// more at every send in the nested AMD-V host (docs/exit-cost.md). NOSPLIT
// with no frame: an assembly function is never a preemption point, and
// the stack cannot move under the kernel.

// func futexWakeOne(addr unsafe.Pointer)
// futex(addr, FUTEX_WAKE|FUTEX_PRIVATE_FLAG, 1): FUTEX_WAKE reads no
// other argument. Its result, the number woken, is of no use to the
// caller: a wake-up that finds no sleeper is the common case.
TEXT ·futexWakeOne(SB),NOSPLIT,$0-8
	MOVQ	addr+0(FP), DI
	MOVQ	$129, SI // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
	MOVQ	$1, DX
	MOVQ	$202, AX // SYS_futex
	SYSCALL
	RET

// func tgkillRaw(pid, tid, sig uintptr) (errno uintptr)
TEXT ·tgkillRaw(SB),NOSPLIT,$0-32
	MOVQ	pid+0(FP), DI
	MOVQ	tid+8(FP), SI
	MOVQ	sig+16(FP), DX
	MOVQ	$234, AX // SYS_tgkill
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	NEGQ	AX
	MOVQ	AX, errno+24(FP)
	RET
ok:
	MOVQ	$0, errno+24(FP)
	RET
