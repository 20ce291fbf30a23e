/* The exit-floor loop: COUNT exits of one kind, timed with the TSC. The
 * same bytes run under govmm (floor.elf links this file) and under the
 * minimal C VMM of bench/floor (which loads floorloop.bin, this file
 * alone, at 0x1000 and enters floor_vmm_entry), so that both time the
 * same instructions and differ only in what serves the exits.
 *
 * floor_loop: EAX = kind (0 port read, 1 MMIO read, 2 x2APIC MSR write),
 * ECX = count (1 or more). Returns the loop's TSC cycles in EDX:EAX;
 * clobbers ECX, keeps the other registers.
 *   port  IN from port 0x700 (no device there: all ones)
 *   mmio  a 32-bit read of 0xFE000000 (no device, no RAM there: all ones)
 *   msr   WRMSR 0x808 (x2APIC TPR) = 0; under govmm the guest enabled
 *         x2APIC first, the floor VMM answers the exit and nothing else */
#define FLOOR_PORT 0x700
#define FLOOR_MMIO 0xFE000000

	.text
	.code32
	.globl floor_vmm_entry, floor_loop
floor_vmm_entry:                        /* first: offset 0 of floorloop.bin */
	call floor_loop
1:	hlt                             /* the floor VMM reads EDX:EAX here */
	jmp 1b

floor_loop:
	push %ebx
	push %esi
	push %edi
	push %ebp
	mov %eax, %ebx
	mov %ecx, %edi
	rdtsc
	mov %eax, %esi
	mov %edx, %ebp
	cmp $1, %ebx
	je 2f
	cmp $2, %ebx
	je 3f
	mov $FLOOR_PORT, %edx
1:	inb %dx, %al
	dec %edi
	jnz 1b
	jmp 4f
2:	mov FLOOR_MMIO, %eax
	dec %edi
	jnz 2b
	jmp 4f
3:	mov $0x808, %ecx
	xor %eax, %eax
	xor %edx, %edx
	wrmsr
	dec %edi
	jnz 3b
4:	rdtsc
	sub %esi, %eax
	sbb %ebp, %edx
	pop %ebp
	pop %edi
	pop %esi
	pop %ebx
	ret
