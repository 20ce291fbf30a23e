/* 64-bit half of the doorbell guest: enter long mode (as syscall64.S), go
 * to user mode (CPL3) and, with govmm's SYSCALL doorbell armed, try to ring
 * it without SYSCALL; then a few genuine SYSCALLs.
 *
 * Forgery k (a store to the doorbell page from user code, or a jump into
 * the trampoline with the forger's RCX and R11) runs with R14 = k, R15 =
 * the RIP its fault must report (the instruction after the store) and R13
 * = where to go on. The fault handlers record vector, error code, RIP, CS,
 * R14 and R15 and resume user mode at R13. The kernel entry records every
 * arrival (RAX tags it: 0x100+n for genuine SYSCALL n, 0xF000+k for
 * forgery k, which must never arrive) and returns with SYSRETQ.
 *
 * Kernel services for user mode: int3 (#BP, DPL 3 gate; int $0x80 from
 * CPL3 hung the guest on the development host), RAX = 0 done
 * (back to 32-bit code), 1 FMASK = FMASK2, 2 disarm the doorbell, 3 arm
 * it, 4 return with RFLAGS.RF set and RAX = RDI, 5 write the doorbell
 * from CPL0. */
#define DOORBELL    0xFEB00000  /* pvsyscall.DoorbellGPA */
#define USER_PAGE   0x400000    /* where the C side copies the user code */
#define DOORBELL_VA 0x700000    /* the C side's alias of DOORBELL, near it */
#define MSR_FMASK   0xC0000084
#define MSR_ENTRY   0x4D564F51  /* pvsyscall.MSRSyscallEntry */
#define FMASK2      0xFFFFFDFD  /* everything but IF (and bit 1) */

#include "user64.inc"

	.text
	.code32
	.globl run_doorbell64
run_doorbell64:                         /* void run_doorbell64(u64 *pml4) */
	push %ebx
	push %esi
	push %edi
	push %ebp
	ENTER_LONG64 db_gdt_ptr, db_idt_ptr
	mov %rsp, db_krsp(%rip)
	pushq $0x2b                     /* SS: user data */
	pushq db_user_stack(%rip)
	pushq $0x202
	pushq $0x33                     /* CS: user code */
	pushq db_user_entry(%rip)
	iretq

/* Back to the 32-bit caller, from any kernel-mode context. */
db_leave:
	mov db_krsp(%rip), %rsp
	pushq $0x08
	lea 3f(%rip), %rax
	push %rax
	lretq
	RETURN_TO_RUNTIME32
	.code64

/* ---- user code: position-independent, copied to USER_PAGE ---- */

	.set nforge, 0
	/* A store from user code: its fault must report the next instruction
	 * and the test goes on there. */
	.macro STORE insn:vararg
	.set nforge, nforge + 1
	mov $nforge, %r14
	mov $0xF000 + nforge, %rax
	lea 9f(%rip), %r15
	mov %r15, %r13
	mov %r15, %rcx                  /* the forger's "return address" */
	\insn
9:
	.endm
	/* A jump to the trampoline with RCX = rcx, R11 = r11 and RFLAGS =
	 * flags: its fault reports the trampoline's second instruction. */
	.macro JUMP flags, r11, rcx=0
	.set nforge, nforge + 1
	mov $nforge, %r14
	mov $0xF000 + nforge, %rax
	lea sc_tramp2(%rip), %r15
	lea 9f(%rip), %r13
	.ifeq \rcx
	mov %r13, %rcx
	.else
	movabs $\rcx, %rcx
	.endif
	movabs $\r11, %r11
	lea db_tramp(%rip), %rdx
	pushq $\flags
	popfq
	jmp *%rdx
9:
	.endm
	/* Genuine SYSCALL n with RFLAGS = flags. */
	.macro GENUINE n, flags
	mov $0x100 + \n, %eax
	mov $0x8000 + \n, %r14
	lea 9f(%rip), %r15
	mov %r15, %r13
	pushq $\flags
	popfq
	syscall
9:
	.endm
	.macro KCALL n
	mov $\n, %eax
	int3
	.endm

	.globl db_user_start, db_user_end
db_user_start:                          /* CPL3, doorbell armed, Linux's FMASK */
	/* Stores from anywhere but the trampoline, with made-up RCX/R11. */
	mov $0x3202, %r11               /* IOPL 3 */
	STORE movabs %al, DOORBELL
	mov $DOORBELL_VA + 0x10, %edx   /* the alias */
	mov $0x0002, %r11               /* IF 0 */
	STORE movl %eax, (%rdx)
	mov $0x246, %r11                /* what R11 could be */
	STORE movb %al, db_user_start + (DOORBELL_VA - USER_PAGE)(%rip) /* the ABI's encoding */
	mov $DOORBELL + 0x800, %edx
	mov $0x60246, %r11              /* VM */
	STORE movq %rax, (%rdx)
	/* Jumps into the trampoline: RFLAGS is the process's, IF=1. */
	JUMP 0x202, 0x3202              /* IOPL 3 */
	JUMP 0x202, 0x0002              /* IF 0 */
	JUMP 0x246, 0x0246              /* R11 = RFLAGS: still not masked */
	/* A read: all ones, no fault. */
	mov $DOORBELL, %edx
	mov $0x7001, %r14
	lea 1f(%rip), %r13
	movl $0, %eax
	movl (%rdx), %eax
	cmp $0xFFFFFFFF, %eax
	je 1f
	ud2
1:	/* Not armed: a store, and a genuine SYSCALL, both refused. */
	KCALL 2
	mov $0x0202, %r11
	STORE movabs %al, DOORBELL
	.set nforge, nforge + 1
	mov $nforge, %r14
	mov $0xF000 + nforge, %rax
	lea sc_tramp2(%rip), %r15
	lea 9f(%rip), %r13
	syscall
9:	KCALL 3
	/* Armed again: genuine SYSCALLs work, also one that starts with RF=1. */
	GENUINE 1, 0x40AD7
	KCALL 5                         /* a doorbell write from CPL0: ignored */
	mov $0x102, %edi                /* GENUINE 2, RF set by IRETQ: */
	mov $0x8002, %r14               /* SYSCALL is the first instruction */
	lea 9f(%rip), %r15              /* after it (RF lasts one) */
	mov %r15, %r13
	pushq $0x40AD7
	popfq
	KCALL 4
	syscall
9:	/* FMASK without IF: forged R11 now passes the masking rule, so the
	 * R11 rule alone must refuse it. RFLAGS is exactly 0x202. */
	KCALL 1
	JUMP 0x202, 0x3202              /* IOPL 3 */
	JUMP 0x202, 0x1202              /* IOPL 1 */
	JUMP 0x202, 0x20202             /* VM */
	JUMP 0x202, 0x10202             /* RF */
	JUMP 0x202, 0x80202             /* VIF */
	JUMP 0x202, 0x100202            /* VIP */
	JUMP 0x202, 0x020a              /* reserved bit 3 */
	JUMP 0x202, 0x8202              /* reserved bit 15 */
	JUMP 0x202, 0x400202            /* reserved bit 22 */
	JUMP 0x202, 0x0200              /* bit 1 clear */
	JUMP 0x202, 0x0202, 0x0000800000000000 /* RCX not canonical */
	GENUINE 3, 0x202
	KCALL 0
	ud2

	/* The trampoline: the ABI's store, mov %al, disp32(%rip). */
	.globl db_tramp, sc_tramp2
db_tramp:
	movb %al, db_user_start + (DOORBELL_VA - USER_PAGE)(%rip)
sc_tramp2:
	ud2
db_user_end:

/* ---- kernel ---- */

	/* The SYSCALL entry (MSRSyscallEntry): record, return with SYSRETQ. */
	.globl db_entry
db_entry:
	pushfq                          /* no stack switch: the user stack */
	popq db_flags(%rip)
	movl db_hits(%rip), %r9d
	cmp $8, %r9d
	jae 1f
	shl $6, %r9
	lea db_hit(%rip), %r8
	add %r9, %r8
	mov %rax, 0(%r8)
	mov %rcx, 8(%r8)
	mov %r11, 16(%r8)
	mov db_flags(%rip), %r9
	mov %r9, 24(%r8)
	movw %cs, 32(%r8)
	mov %r15, 40(%r8)
	mov %r14, 48(%r8)
1:	incl db_hits(%rip)
	mov $0x202, %r11
	sysretq

	/* int3 from user mode: kernel services. */
	.globl db_kcall
db_kcall:
	push %rcx
	push %rdx
	cmp $0, %eax
	je db_leave
	cmp $1, %eax
	jne 1f
	mov $MSR_FMASK, %ecx
	mov $FMASK2, %eax
	xor %edx, %edx
	wrmsr
	jmp 9f
1:	cmp $2, %eax
	jne 1f
	mov $MSR_ENTRY, %ecx
	xor %eax, %eax
	xor %edx, %edx
	wrmsr
	jmp 9f
1:	cmp $3, %eax
	jne 1f
	mov $MSR_ENTRY, %ecx
	lea db_entry(%rip), %rax
	xor %edx, %edx
	wrmsr
	jmp 9f
1:	cmp $4, %eax
	jne 1f
	orq $0x10000, 32(%rsp)          /* the frame's RFLAGS: RF */
	mov %rdi, %rax
	jmp 9f
1:	cmp $5, %eax
	jne 1f
	movabs %al, DOORBELL            /* from CPL0: an access to nothing */
	incl db_kwrites(%rip)
	jmp 9f
1:	ud2
9:	pop %rdx
	pop %rcx
	iretq

	/* Exceptions: record, resume user mode at R13; from kernel mode,
	 * record and leave. */
	.globl db_stubs
	.balign 16
db_stubs:
	.set vec, 0
	.rept 32
	.balign 16
	.if vec != 8 && (vec < 10 || vec > 14) && vec != 17 && vec != 21 && vec != 29 && vec != 30
	pushq $0                        /* no error code: make one */
	.endif
	pushq $vec
	jmp db_fault
	.set vec, vec + 1
	.endr
db_fault:                               /* vec, err, rip, cs, rflags, rsp, ss */
	push %rax
	push %rcx
	movl db_faults(%rip), %ecx
	cmp $32, %ecx
	jae 1f
	shl $6, %rcx
	lea db_fault_rec(%rip), %rax
	add %rcx, %rax
	mov 16(%rsp), %rcx
	mov %rcx, 0(%rax)               /* vector */
	mov 24(%rsp), %rcx
	mov %rcx, 8(%rax)               /* error code */
	mov 32(%rsp), %rcx
	mov %rcx, 16(%rax)              /* RIP */
	mov 40(%rsp), %rcx
	mov %rcx, 24(%rax)              /* CS */
	mov 48(%rsp), %rcx
	mov %rcx, 32(%rax)              /* RFLAGS */
	mov %r14, 40(%rax)
	mov %r15, 48(%rax)
1:	incl db_faults(%rip)
	testq $3, 40(%rsp)
	jz db_leave                     /* a fault in kernel mode: stop */
	mov %r13, 32(%rsp)              /* go on where the forger said */
	pop %rcx
	pop %rax
	add $16, %rsp
	iretq

	.data
	.globl db_hits, db_hit, db_faults, db_fault_rec, db_kwrites, db_nforge
	.globl db_user_entry, db_user_stack, db_idt_ptr, db_gdt, db_tss
	.balign 64
db_hit:	.fill 8 * 8, 8, 0
db_fault_rec: .fill 32 * 8, 8, 0
db_hits: .long 0
db_faults: .long 0
db_kwrites: .long 0
db_nforge: .long nforge
	.balign 8
db_krsp: .quad 0
db_flags: .quad 0
db_user_entry: .quad 0
db_user_stack: .quad 0
	.balign 16
	.word 0, 0, 0
db_idt_ptr:
	.word 256 * 16 - 1
	.long idt64, 0
	.word 0
	USER64_TABLES db_gdt_ptr, db_gdt, db_tss

	.section .note.GNU-stack, "", @progbits
