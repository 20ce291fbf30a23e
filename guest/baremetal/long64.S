/* 64-bit half of the int3 guest: enter long mode, execute int3 three times
 * with a counting #BP handler, int n through an interrupt gate, a trap gate
 * and an absent gate, and come back to 32-bit code (compatibility
 * mode, paging stays on) so the C runtime can report. */
	.text
	.code32
	.globl run64
run64:                                  /* void run64(u64 *pml4) */
	push %ebx
	push %esi
	push %edi
	push %ebp
	mov 20(%esp), %eax
	mov %eax, %cr3
	mov %cr4, %eax
	or $0x20, %eax                  /* PAE */
	mov %eax, %cr4
	mov $0xC0000080, %ecx           /* EFER.LME */
	rdmsr
	or $0x100, %eax
	wrmsr
	mov %cr0, %eax
	or $0x80000000, %eax            /* PG: long mode active */
	mov %eax, %cr0
	ljmp $0x18, $1f

	.code64
	/* ELF32 cannot hold 64-bit absolute relocations: use RIP-relative. */
1:	lidt idt64_ptr(%rip)
	mov %esp, %esp                  /* clear RSP[63:32] */
	/* On the development host int3 in 64-bit kernel mode fails emulation
	 * and the VMM injects #BP with RIP past the 0xCC byte. */
	int3
	.globl int3_ret1, int3_ret2, int3_ret3
int3_ret1:
	int3
int3_ret2:
	int3
int3_ret3:
	/* int n in kernel mode: this host's emulator leaves software interrupts
	 * in protected and long mode to user space as well. 0x80 goes through
	 * an interrupt gate, 0x81 through a trap gate, 0x82 names a gate that
	 * is not present: #NP with error code 0x82*8+2 (IDT, not external),
	 * which the #NP handler skips. */
	int $0x80
	.globl intn_ret1, intn_ret2, intn_ret3
intn_ret1:
	int $0x81
intn_ret2:
	.globl intn_np
intn_np:
	int $0x82
intn_ret3:
	/* More instructions this host's emulator gives up on in kernel mode;
	 * govmm completes them (fwait: no-op, popcnt: register operands). */
	fwait
	mov $0xF0F0, %ebx
	popcnt %rbx, %rax
	mov %eax, popcnt_result(%rip)
	/* bad=1: one govmm does not complete (an SSE op): on this host the VM
	 * must stop with an error naming it; on hardware it is a #UD. */
	cmpl $0, bad_insn(%rip)
	je 5f
	pxor %xmm0, %xmm0
5:	pushq $0x08                     /* back to 32-bit code: compatibility mode */
	lea 2f(%rip), %rax
	push %rax
	lretq

	.code32
2:	mov $0x10, %eax
	mov %eax, %ss
	pop %ebp
	pop %edi
	pop %esi
	pop %ebx
	ret

	.code64
	.globl bp64, bad64, intn80, intn81, np64
intn80:                                 /* int $0x80: record vector, RIP, CS */
	push %rax
	mov $0x80, %eax
	jmp 1f
intn81:                                 /* int $0x81 (trap gate) */
	push %rax
	mov $0x81, %eax
1:	push %rcx
	push %rdx
	movl intn_count(%rip), %ecx
	cmp $4, %ecx
	jae 2f
	lea intn_vec(%rip), %rdx
	movl %eax, (%rdx,%rcx,4)
	movq 24(%rsp), %rax             /* return RIP */
	lea intn_rip(%rip), %rdx
	movl %eax, (%rdx,%rcx,4)
	movq 32(%rsp), %rax             /* return CS */
	lea intn_cs(%rip), %rdx
	movl %eax, (%rdx,%rcx,4)
2:	incl intn_count(%rip)
	pop %rdx
	pop %rcx
	pop %rax
	iretq

np64:                                   /* #NP: record the error code and faulting RIP, skip the int */
	push %rax
	movq 8(%rsp), %rax              /* error code */
	movl %eax, np_code(%rip)
	movq 16(%rsp), %rax             /* RIP of the faulting int */
	movl %eax, np_rip(%rip)
	addq $2, %rax
	movq %rax, 16(%rsp)
	incl np_count(%rip)
	pop %rax
	add $8, %rsp                    /* drop the error code */
	iretq

bp64:                                   /* #BP: record the return RIP, count */
	push %rax
	push %rcx
	push %rdx
	movl bp_count(%rip), %ecx
	cmp $8, %ecx
	jae 1f
	movq 24(%rsp), %rax
	lea bp_rip(%rip), %rdx
	movl %eax, (%rdx,%rcx,4)
	shr $32, %rax
	orl %eax, bp_rip_hi(%rip)
1:	incl bp_count(%rip)
	pop %rdx
	pop %rcx
	pop %rax
	iretq

bad64:                                  /* any other vector: report and exit 1 */
	mov $bad_msg, %esi
1:	movzbl (%rsi), %ebx
	test %ebx, %ebx
	jz 3f
	mov $0x3fd, %edx
2:	inb %dx, %al
	test $0x20, %al
	jz 2b
	mov $0x3f8, %edx
	mov %bl, %al
	outb %al, %dx
	inc %rsi
	jmp 1b
3:	mov $0xf4, %edx
	mov $1, %eax
	outl %eax, %dx
4:	cli
	hlt
	jmp 4b

	.data
	.globl bp_count, bp_rip, bp_rip_hi, idt64_ptr, popcnt_result, bad_insn
	.globl intn_count, intn_vec, intn_rip, intn_cs, np_count, np_code, np_rip
intn_count: .long 0
intn_vec:  .fill 4, 4, 0
intn_rip:  .fill 4, 4, 0
intn_cs:   .fill 4, 4, 0
np_count:  .long 0
np_code:   .long 0
np_rip:    .long 0
popcnt_result: .long 0
bad_insn:  .long 0
bp_count:  .long 0
bp_rip_hi: .long 0
bp_rip:    .fill 8, 4, 0
	.align 4
	.word 0
idt64_ptr:
	.word 256 * 16 - 1
	.long idt64, 0
bad_msg:
	.asciz "FAIL long mode: unexpected exception\nFAIL int3\n"

	.section .note.GNU-stack, "", @progbits
