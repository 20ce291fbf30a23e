/* 64-bit half of the syscall guest: enter long mode with its own GDT (user
 * segments, a TSS), go to user mode (CPL3) with IRETQ and issue SYSCALL
 * twice; the kernel entry records what SYSCALL left (CS, SS, RCX, R11,
 * RFLAGS), returns to user mode the first time with SYSRETQ and comes back
 * to 32-bit code (compatibility mode) after the second. */
#define USER_RFLAGS 0x40AD7     /* AC OF IF SF ZF AF PF CF + bit 1 */
#define DOORBELL    0xFEB00000  /* pvsyscall.DoorbellGPA */
#define USER_PAGE   0x400000    /* where the C side copies the user code */
#define DOORBELL_VA 0x700000    /* the C side's alias of DOORBELL, near it */

#include "user64.inc"

	.text
	.code32
	.globl run_syscall64
run_syscall64:                          /* void run_syscall64(u64 *pml4) */
	push %ebx
	push %esi
	push %edi
	push %ebp
	ENTER_LONG64 gdt64_ptr, sc_idt_ptr
	/* A doorbell write from CPL0 is an access to nothing: ignored. */
	movabs %al, DOORBELL
	mov %rsp, sc_krsp(%rip)
	pushq $0x2b                     /* SS: user data */
	pushq sc_user_stack(%rip)
	pushq $USER_RFLAGS
	pushq $0x33                     /* CS: user code */
	pushq sc_user_entry(%rip)
	iretq

	/* User code: position-independent, copied by the C side to the one
	 * user-accessible 2 MiB page (kernel pages are supervisor-only, as in
	 * Linux). */
	.globl sc_user_start, sc_user_end
sc_user_start:                          /* CPL3 */
	mov $0x1111, %rcx               /* SYSCALL must overwrite both */
	mov $0x2222, %r11
	mov $1, %eax
	syscall
	.globl sc_user_ret1, sc_user_ret2
sc_user_ret1:
	/* An exception from user mode after a completed SYSCALL: the CPU must
	 * switch to TSS.RSP0 and push a CPL3 frame. */
	int3
	.globl sc_user_bp
sc_user_bp:
	mov $0x3333, %rcx
	mov $0x4444, %r11
	mov $2, %eax
	syscall
sc_user_ret2:
	ud2
	/* The trampoline: its first instruction rings the doorbell, which
	 * govmm answers by completing the SYSCALL. pvsyscall's ABI fixes its
	 * encoding, mov %al, disp32(%rip) (88 05 disp32): RIP-relative, so
	 * the doorbell is reached through an alias within 2 GiB. The
	 * displacement is computed here, before the copy, which keeps it. */
	.globl sc_tramp
sc_tramp:
	movb %al, sc_user_start + (DOORBELL_VA - USER_PAGE)(%rip)
	ud2
sc_user_end:

	/* LSTAR on hardware virtualization; on emulating hosts the doorbell's
	 * MSR, reached through the trampoline below. */
	.globl sc_entry
sc_entry:
	pushfq                          /* before anything changes a flag */
	popq sc_flags(%rip)
	swapgs                          /* as Linux's entry does first */
	mov %gs:0, %r8
	mov %r8, sc_gsword(%rip)
	mov %eax, %r10d
	dec %r10d
	cmp $1, %r10d
	ja 9f
	shl $6, %r10                    /* 64-byte record per SYSCALL */
	lea sc_rec(%rip), %r9
	add %r10, %r9
	mov %rcx, 0(%r9)
	mov %r11, 8(%r9)
	mov sc_flags(%rip), %r8
	mov %r8, 16(%r9)
	movw %cs, 24(%r9)
	movw %ss, 32(%r9)
	mov %rsp, 40(%r9)
	incl sc_count(%rip)
	cmp $1, %eax
	jne 2f
	swapgs                          /* as Linux's exit does last */
	sysretq
2:	swapgs
	mov sc_krsp(%rip), %rsp         /* second SYSCALL: back to 32-bit code */
	pushq $0x08
	lea 3f(%rip), %rax
	push %rax
	lretq
9:	ud2

	/* #BP from user mode: record the stack it landed on and its frame. */
	.globl sc_bp
sc_bp:
	mov %rsp, sc_bp_rsp(%rip)
	push %rax
	mov 8(%rsp), %rax
	mov %rax, sc_bp_rip(%rip)
	mov 16(%rsp), %rax
	mov %rax, sc_bp_cs(%rip)
	pop %rax
	iretq

	/* Exceptions: record the vector and the frame, then leave as after
	 * the second SYSCALL so the C side can report what happened. */
	.globl sc_stubs
	.balign 16
sc_stubs:
	.set vec, 0
	.rept 32
	.balign 16
	pushq $vec
	jmp sc_fault
	.set vec, vec + 1
	.endr
sc_fault:
	popq sc_fault_vec(%rip)
	lea sc_fault_frame(%rip), %r9
	xor %ecx, %ecx
4:	mov (%rsp,%rcx,8), %rax
	mov %rax, (%r9,%rcx,8)
	inc %ecx
	cmp $6, %ecx
	jb 4b
	jmp 2b

	RETURN_TO_RUNTIME32


	.data
	.globl sc_count, sc_rec, sc_krsp, sc_idt_ptr, gdt64_ptr, gdt64, tss64
	.balign 64
sc_rec:	.fill 16, 8, 0
sc_count: .long 0
	.globl sc_fault_vec, sc_fault_frame
	.balign 8
sc_fault_vec: .quad 0xFFFF
sc_fault_frame: .fill 6, 8, 0
sc_krsp: .quad 0
sc_flags: .quad 0
	.globl sc_user_entry, sc_user_stack
sc_user_entry: .quad 0
sc_user_stack: .quad 0
	.globl sc_gsword
sc_gsword: .quad 0
	.globl sc_bp_rsp, sc_bp_rip, sc_bp_cs
sc_bp_rsp: .quad 0
sc_bp_rip: .quad 0
sc_bp_cs: .quad 0
	.balign 16
	.word 0, 0, 0
sc_idt_ptr:
	.word 256 * 16 - 1
	.long idt64, 0
	.word 0
	USER64_TABLES gdt64_ptr, gdt64, tss64

	.section .note.GNU-stack, "", @progbits
