/* The IPI round trip's guest code, shared by govmm's rtt.elf (which links
 * this file) and the floor C VMM of bench/floor (which loads rttloop.bin,
 * this file alone, at 0x1000): both time the same instructions, so a round
 * trip under govmm against one under the floor differs only in what serves
 * the exits. As floorloop.S is for one exit, this is for one IPI.
 *
 * The sender (rtt_measure) writes the ICR for the receiver, spins until
 * the receiver's handler has counted the IPI in rtt_acks, and waits gap
 * TSC cycles before the next; the receiver (rtt_receive) waits in
 * "sti; hlt" (rtt_spin == 0: each IPI wakes a halted vCPU) or spins in
 * guest code with IF=1 (rtt_spin != 0: each IPI kicks a running one). Its
 * handler (rtt_isr) EOIs through rtt_eoi and counts.
 *
 * How the ICR is written (rtt_send_kind):
 *   0 x2APIC: WRMSR 0x830, EDX = rtt_send_dest, EAX = rtt_send_lo (1 exit)
 *   1 xAPIC: read ICR (delivery status), write ICR2 = rtt_send_dest << 24,
 *     write ICR = rtt_send_lo (3 MMIO exits, as rt.c's apic_icr)
 *   2 govmm's PV send-IPI: WRMSR 0x4D564F50, EAX = rtt_send_lo (vector),
 *     EDX = 1 bitmap word at rtt_pv_bitmap, EDI = 0 (1 exit)
 *
 * Under the floor VMM (rtt_vmm_bsp at offset 0, rtt_vmm_ap at offset 16,
 * flat 32-bit protected mode set by the VMM, no GDT or IDT in memory):
 *   BSP: EAX = send kind (0 or 1), ECX = rounds, EDX = gap. Loads this
 *        file's GDT and IDT, waits for the AP, measures a halted then a
 *        spinning receiver, each between section markers (OUT to port
 *        0x660: the section, then 0), and reports each with HLT: EBX = 1
 *        halted, 2 spinning, 0 done; EDX:EAX = the section's TSC cycles, ESI = the
 *        shortest round trip, EDI = the longest; each round trip's cycles
 *        at FLOOR_SAMPLES (0x100000), one 32-bit word each, for the first
 *        65,536 of them (rtt_samples).
 *   AP:  EAX = send kind. Loads the tables, says ready, runs rtt_receive.
 * The handler returns with popfl; ret rather than IRET, as rt's stubs do
 * (an emulating host cannot interpret a protected-mode IRET). */
#define V_RTT       0x50
#define SECTION     0x660               /* govmm's accounting sections */
#define MSR_ICR     0x830
#define MSR_EOI     0x80B
#define MSR_PV_IPI  0x4D564F50
#define XAPIC       0xFEE00000
#define XAPIC_EOI   (XAPIC + 0x0B0)
#define XAPIC_ICR   (XAPIC + 0x300)
#define XAPIC_ICR2  (XAPIC + 0x310)
#define FLOOR_SAMPLES     0x100000      /* under the floor VMMs: bench/floor/floor.h */
#define FLOOR_SAMPLES_CAP 65536

	.data
	.balign 4
	.globl rtt_acks, rtt_hlts, rtt_ack_hlts, rtt_spin, rtt_eoi, rtt_send_kind, rtt_send_dest, rtt_send_lo, rtt_pv_bitmap, rtt_samples, rtt_samples_cap
rtt_acks:      .long 0                  /* IPIs the receiver's handler counted */
rtt_hlts:      .long 0                  /* HLTs the receiver executed */
rtt_ack_hlts:  .long 0                  /* rtt_hlts when the handler last counted */
rtt_spin:      .long 0                  /* the receiver spins instead of halting */
rtt_eoi:       .long rtt_eoi_x2apic     /* the handler's EOI: a cdecl function */
rtt_send_kind: .long 0
rtt_send_dest: .long 1
rtt_send_lo:   .long V_RTT
	.balign 8
rtt_pv_bitmap: .long 2, 0               /* APIC ID 1 */
rtt_ready:     .long 0                  /* floor VMM: the AP is up */
rtt_samples:   .long 0                  /* where each round trip's cycles go */
rtt_samples_cap: .long 0                /* (32 bits each), and how many fit */

	.text
	.code32
	.globl rtt_vmm_bsp, rtt_vmm_ap, rtt_measure, rtt_receive, rtt_isr, rtt_eoi_x2apic, rtt_eoi_xapic
rtt_vmm_bsp:                            /* offset 0 of rttloop.bin */
	jmp vmm_bsp
	.org rtt_vmm_bsp + 16
rtt_vmm_ap:                             /* offset 16 */
	jmp vmm_ap

/* u64 rtt_measure(u32 rounds, u32 gap, u32 minmax[2]): rounds round trips
 * (1 or more), each one IPI sent and its acknowledgement seen, then gap
 * cycles of waiting. Returns their TSC cycles; minmax gets the shortest
 * and the longest, and each one's cycles (2^32 - 1 at most) go to
 * rtt_samples[i] for the first rtt_samples_cap of them (a median, which
 * one L1 timer tick in a thousand round trips does not move as it moves
 * the mean). cdecl; keeps EBX, ESI, EDI, EBP. */
rtt_measure:
	push %ebp
	push %edi
	push %esi
	push %ebx
	sub $16, %esp                   /* 0: total lo, 4: total hi, 8: min, 12: max */
	movl $0, 0(%esp)
	movl $0, 4(%esp)
	movl $0xffffffff, 8(%esp)
	movl $0, 12(%esp)
	mov 36(%esp), %ebp              /* rounds */
1:	mov rtt_acks, %ebx
	inc %ebx                        /* the count this round's IPI makes */
	rdtsc
	mov %eax, %esi
	mov %edx, %edi
	call send
2:	mov rtt_acks, %eax              /* until the count reaches this round's: */
	sub %ebx, %eax                  /* a second delivery of one IPI (KVM's */
	jns 3f                          /* LAPIC in the nested AMD-V host does */
	pause                           /* that, docs/hosts.md) must not hang */
	jmp 2b                          /* the sender; rtt.c's check reports it */
3:	rdtsc
	sub %esi, %eax
	sbb %edi, %edx
	add %eax, 0(%esp)
	adc %edx, 4(%esp)
	test %edx, %edx                 /* min and max of the low word; a round */
	jz 4f                           /* trip of 2^32 cycles or more counts as */
	mov $0xffffffff, %eax           /* 2^32 - 1 in them */
4:	mov 36(%esp), %ecx              /* this round's index: rounds less */
	sub %ebp, %ecx                  /* those left; its cycles into */
	cmp rtt_samples_cap, %ecx       /* rtt_samples, when it has room */
	jae 7f
	mov rtt_samples, %edx
	mov %eax, (%edx,%ecx,4)
7:	cmp 8(%esp), %eax
	jae 5f
	mov %eax, 8(%esp)
5:	cmp 12(%esp), %eax
	jbe 6f
	mov %eax, 12(%esp)
6:	mov 40(%esp), %eax              /* gap */
	call delay_cycles
	dec %ebp
	jnz 1b
	mov 44(%esp), %ecx              /* minmax */
	mov 8(%esp), %eax
	mov %eax, 0(%ecx)
	mov 12(%esp), %eax
	mov %eax, 4(%ecx)
	mov 0(%esp), %eax
	mov 4(%esp), %edx
	add $16, %esp
	pop %ebx
	pop %esi
	pop %edi
	pop %ebp
	ret

/* send: one ICR write of rtt_send_kind. Clobbers EAX, ECX, EDX. */
send:
	mov rtt_send_kind, %eax
	cmp $1, %eax
	je 2f
	cmp $2, %eax
	je 3f
	mov $MSR_ICR, %ecx
	mov rtt_send_lo, %eax
	mov rtt_send_dest, %edx
	wrmsr
	ret
2:	mov XAPIC_ICR, %eax             /* delivery status */
	test $0x1000, %eax
	jnz 2b
	mov rtt_send_dest, %eax
	shl $24, %eax
	mov %eax, XAPIC_ICR2
	mov rtt_send_lo, %eax
	mov %eax, XAPIC_ICR
	ret
3:	push %esi
	push %edi
	mov $MSR_PV_IPI, %ecx
	mov rtt_send_lo, %eax
	mov $1, %edx
	mov $rtt_pv_bitmap, %esi
	xor %edi, %edi
	wrmsr
	pop %edi
	pop %esi
	ret

/* delay_cycles: spin until EAX TSC cycles have passed. Clobbers EAX, ECX,
 * EDX. */
delay_cycles:
	push %ebx
	push %esi
	mov %eax, %ebx
	rdtsc
	mov %eax, %esi
1:	pause
	rdtsc
	sub %esi, %eax
	cmp %ebx, %eax
	jb 1b
	pop %esi
	pop %ebx
	ret

/* rtt_receive: the receiver's loop with IF set, never returns. An IPI
 * that lands between the test of rtt_spin and HLT is handled and the HLT
 * then waits for the next: every IPI is a round trip of its own. */
rtt_receive:
	sti                             /* once: an STI in the loop would hold */
1:	cmpl $0, rtt_spin               /* off a kick's injection for its shadow */
	jne 2f                          /* now and then (an interrupt-window exit) */
	incl rtt_hlts                   /* the receiver's own count of its HLTs: */
	hlt                             /* with no in-kernel LAPIC each is an exit */
	jmp 1b
2:	pause
	jmp 1b

/* rtt_isr: vector V_RTT's handler, entered through an interrupt gate at
 * the same privilege level: EOI, then count. */
rtt_isr:
	push %eax
	push %ecx
	push %edx
	call *rtt_eoi
	lock incl rtt_acks
	mov rtt_hlts, %eax              /* the receiver halts again once it */
	mov %eax, rtt_ack_hlts          /* counts a HLT past this (rtt.c) */
	mov 12(%esp), %eax              /* EIP */
	mov 20(%esp), %ecx              /* EFLAGS */
	mov %ecx, 16(%esp)              /* [EFLAGS][EIP] where CS, EFLAGS were */
	mov %eax, 20(%esp)
	pop %edx
	pop %ecx
	pop %eax
	add $4, %esp
	popfl
	ret

rtt_eoi_x2apic:
	mov $MSR_EOI, %ecx
	xor %eax, %eax
	xor %edx, %edx
	wrmsr
	ret

rtt_eoi_xapic:
	movl $0, XAPIC_EOI
	ret

/* The floor VMM's entries. */
tables:                                 /* EAX = send kind: the EOI's kind too */
	lgdt floor_gdt_ptr
	movl $rtt_eoi_x2apic, rtt_eoi
	test %eax, %eax
	jz 1f
	movl $rtt_eoi_xapic, rtt_eoi
1:	mov $rtt_isr, %eax              /* interrupt gate, selector 0x08, DPL 0 */
	mov %eax, %edx
	and $0xffff, %eax
	or $0x00080000, %eax
	and $0xffff0000, %edx
	or $0x8E00, %edx
	mov %eax, floor_idt + 8 * V_RTT
	mov %edx, floor_idt + 8 * V_RTT + 4
	lidt floor_idt_ptr
	ret

vmm_bsp:
	mov %eax, rtt_send_kind
	movl $FLOOR_SAMPLES, rtt_samples
	movl $FLOOR_SAMPLES_CAP, rtt_samples_cap
	mov %ecx, vmm_rounds
	mov %edx, vmm_gap
	call tables
1:	cmpl $0, rtt_ready
	je 1b
	mov vmm_gap, %eax               /* let the AP reach HLT */
	call delay_cycles
	mov $1, %ebx
	call vmm_section
	movl $1, rtt_spin               /* one round trip, untimed, wakes the */
	push $scratch                   /* receiver into its spin */
	pushl vmm_gap
	push $1
	call rtt_measure
	add $12, %esp
	mov $2, %ebx
	call vmm_section
	xor %ebx, %ebx
2:	hlt
	jmp 2b

/* vmm_section: vmm_rounds round trips reported with HLT, EBX = section
 * (rtt_measure keeps EBX). */
vmm_section:
	mov $SECTION, %edx              /* the section's start, as rtt.c marks */
	mov %ebx, %eax                  /* it under govmm (port 0x660) */
	out %eax, %dx
	push $scratch
	pushl vmm_gap
	pushl vmm_rounds
	call rtt_measure
	add $12, %esp
	push %eax
	push %edx
	mov $SECTION, %edx
	xor %eax, %eax
	out %eax, %dx
	pop %edx
	pop %eax
	mov scratch, %esi
	mov scratch + 4, %edi
	hlt
	ret

vmm_ap:
	call tables
	movl $1, rtt_ready
	jmp rtt_receive

	.data
	.balign 8
floor_gdt:	.quad 0
	.quad 0x00CF9B000000FFFF        /* 0x08: 32-bit code, 4 GiB */
	.quad 0x00CF93000000FFFF        /* 0x10: data, 4 GiB */
floor_gdt_ptr:
	.word 8 * 3 - 1
	.long floor_gdt
floor_idt_ptr:
	.word 8 * (V_RTT + 1) - 1
	.long floor_idt
scratch: .long 0, 0
vmm_rounds: .long 0
vmm_gap: .long 0

	.bss
	.balign 8
floor_idt:	.space 8 * (V_RTT + 1)
