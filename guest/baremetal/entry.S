/* Entry, descriptor tables, interrupt stubs and the AP trampoline. */
#include "rt.h"

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003             /* page-align modules, want mem info; no a.out kludge */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC, MB_FLAGS, -(MB_MAGIC + MB_FLAGS)

	.text
	.code32
	.globl _start
_start:                                 /* EAX = 0x2BADB002, EBX = multiboot info */
	cli
	cld
	mov %eax, %ebp
	mov %ebx, %esi
	lgdt gdt_ptr
	ljmp $0x08, $1f
1:	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	mov $stacks + STACK_SIZE, %esp  /* BSP = CPU index 0 */
	mov $__bss_start, %edi          /* do not trust the loader to zero .bss */
	mov $__bss_end, %ecx
	sub %edi, %ecx
	shr $2, %ecx
	xor %eax, %eax
	rep stosl
	lidt idt_ptr
	push %esi
	push %ebp
	call kmain
halt:	cli
	hlt
	jmp halt

/* One 16-byte stub per vector: push a dummy error code where the CPU does
 * not push one, then the vector number. */
	.align 16
	.globl isr_stubs
isr_stubs:
	.set vec, 0
	.rept 256
	.align 16
	.if (vec == 8) || ((vec >= 10) && (vec <= 14)) || (vec == 17) || (vec == 21) || (vec == 29) || (vec == 30)
	.else
	push $0
	.endif
	push $vec
	jmp isr_common
	.set vec, vec + 1
	.endr

isr_common:
	pusha
	cld
	push %esp                       /* struct frame * */
	call isr_dispatch
	add $4, %esp
	/* No iret: the host's KVM emulator cannot interpret a protected-mode
	 * IRET (emulation failure). Same-privilege return by hand: rewrite
	 * [EIP][CS][EFLAGS] as [EFLAGS][EIP], then popfl; ret. An interrupt
	 * taken between the two nests on this stack harmlessly. */
	mov 40(%esp), %eax              /* EIP (a handler may have moved it) */
	mov 48(%esp), %ecx              /* EFLAGS */
	mov %eax, 48(%esp)
	mov %ecx, 44(%esp)
	popa
	add $12, %esp                   /* vector, error code, old EIP slot */
	popfl
	ret

/* AP trampoline: copied to TRAMPOLINE (0x8000) at run time; SIPI vector 0x08
 * starts it in real mode at CS=0x0800, IP=0. Switch to protected mode with
 * the shared GDT and jump into the image. */
	.code16
	.globl tramp_start, tramp_end
tramp_start:
	cli
	mov %cs, %ax
	mov %ax, %ds
	lgdtl tramp_gdtp - tramp_start  /* DS-relative: position independent */
	mov %cr0, %eax
	or $1, %eax
	mov %eax, %cr0
	ljmpl $0x08, $ap_pm32
	.align 4
tramp_gdtp:
	.word gdt_end - gdt - 1
	.long gdt
tramp_end:

	.code32
ap_pm32:
	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %eax, %fs
	mov %eax, %gs
	cmpl $0, ap_slot_by_id
	jne 1f
	mov $1, %eax                    /* APs start together: take an index atomically */
	lock xadd %eax, ap_next
	cmp $MAX_CPUS, %eax
	jae halt                        /* no stack left for this one */
	jmp 2f
1:	mov $1, %eax                    /* a guest that restarts CPUs (fuzz): the slot */
	cpuid                           /* is the initial APIC ID, CPUID.1:EBX[31:24], */
	mov %ebx, %eax                  /* so each start of a CPU reuses its own stack */
	shr $24, %eax                   /* instead of using up MAX_CPUS of them */
2:	mov %eax, %ebx
	shl $12, %eax                   /* STACK_SIZE = 4096 */
	lea stacks + STACK_SIZE(%eax), %esp
	lidt idt_ptr
	cld
	push %ebx
	call ap_entry
	jmp halt

	.data
	.align 8
/* Accessed bits set: the host's emulator spins forever on a GDT whose
 * descriptors lack them when it cannot write them back. */
	.globl gdt, gdt_end
gdt:	.quad 0
	.quad 0x00CF9B000000FFFF        /* 0x08: 32-bit code, 4 GiB */
	.quad 0x00CF93000000FFFF        /* 0x10: data, 4 GiB */
	.quad 0x00AF9B000000FFFF        /* 0x18: 64-bit code (int3 guest) */
gdt_end:
	.align 4
	.word 0
gdt_ptr:
	.word gdt_end - gdt - 1
	.long gdt
	.word 0
idt_ptr:
	.word 256 * 8 - 1
	.long idt
ap_next:
	.long 1                         /* next AP CPU index */
	.globl ap_slot_by_id
ap_slot_by_id:
	.long 0                         /* 1: an AP's slot is its APIC ID (rt.h) */

	.section .stacks, "aw", @nobits
	.align 4096
	.globl stacks
stacks:	.skip MAX_CPUS * STACK_SIZE

	.section .note.GNU-stack, "", @progbits
