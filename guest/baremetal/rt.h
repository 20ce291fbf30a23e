/* Shared runtime of the govmm bare-metal test guests.
 *
 * Every guest is a Multiboot v1 ELF32 entered in 32-bit protected mode
 * (QEMU's -kernel conventions, see docs/apic-reference.md). The runtime
 * gives it: GDT/IDT with one stub per vector, a polled 16550 console, the
 * isa-debug-exit port, fw_cfg, the multiboot command line, xAPIC (MMIO) and
 * x2APIC (MSR) register access, and AP start-up through INIT + SIPI.
 *
 * Guest kernel code is interpreted on the development host (~1.7M insn/s,
 * ~15us per exit), so everything here is small and never spins without a
 * TSC-bounded timeout. */
#ifndef RT_H
#define RT_H

#define MAX_CPUS   1024         /* x2APIC; xAPIC guests only see IDs < 255 */
#define STACK_SIZE 4096         /* per CPU; CPU index = stack slot */
#define TRAMPOLINE 0x8000       /* AP real-mode entry: SIPI vector 0x08 */

#ifndef __ASSEMBLER__
#include <stdarg.h>

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

/* ---- port I/O, MSRs, CPUID, TSC ---- */
static inline void outb(u16 p, u8 v) { asm volatile("outb %0, %1" :: "a"(v), "Nd"(p)); }
static inline void outw(u16 p, u16 v) { asm volatile("outw %0, %1" :: "a"(v), "Nd"(p)); }
static inline void outl(u16 p, u32 v) { asm volatile("outl %0, %1" :: "a"(v), "Nd"(p)); }
static inline u32 inl(u16 p) { u32 v; asm volatile("inl %1, %0" : "=a"(v) : "Nd"(p)); return v; }
static inline u8 inb(u16 p) { u8 v; asm volatile("inb %1, %0" : "=a"(v) : "Nd"(p)); return v; }
static inline u64 rdmsr(u32 m)
{
	u32 lo, hi;
	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(m));
	return (u64)hi << 32 | lo;
}
static inline void wrmsr(u32 m, u64 v)
{
	asm volatile("wrmsr" :: "c"(m), "a"((u32)v), "d"((u32)(v >> 32)) : "memory");
}
static inline u64 rdtsc(void)
{
	u32 lo, hi;
	asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (u64)hi << 32 | lo;
}
static inline void cpuid(u32 leaf, u32 r[4])
{
	asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
}
static inline void pause(void) { asm volatile("pause" ::: "memory"); }
static inline void sti(void) { asm volatile("sti" ::: "memory"); }
static inline void cli(void) { asm volatile("cli" ::: "memory"); }
#define atomic_inc(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)

/* Timeouts. The TSC rate is unknown; assume at least 1 GHz, so "secs" is an
 * upper bound of real seconds divided by (TSC GHz). Generous on purpose:
 * the development host is slow. */
#define TSC_SEC 1000000000ull
#define WAIT(cond, secs) ({                                              \
	u64 _end = rdtsc() + (u64)(secs) * TSC_SEC;                      \
	while (!(cond) && rdtsc() < _end)                                \
		pause();                                                 \
	(cond) ? 1 : 0; })
void delay(u64 ticks);                   /* TSC spin, for "nothing more arrives" checks */

/* ---- interrupts ---- */
struct frame {                           /* what isr_common pushes */
	u32 edi, esi, ebp, esp0, ebx, edx, ecx, eax;
	u32 vec, err, eip, cs, eflags;
};
typedef void (*isr_fn)(struct frame *);
extern isr_fn isr_table[256];            /* unset vector => FAIL and exit */

/* ---- console, results, exit ---- */
void printf(const char *fmt, ...);
void ok(const char *what);
void fail(const char *what, const char *fmt, ...);
int check(int cond, const char *what, const char *fmt, ...);
__attribute__((noreturn)) void die(const char *what, const char *fmt, ...);
__attribute__((noreturn)) void finish(void);      /* PASS/FAIL <name>, exit */
__attribute__((noreturn)) void vm_exit(u32 code); /* isa-debug-exit */
/* govmm accounting window: N=1..255 opens section N, 0 closes it. */
static inline void section(u32 n) { outl(0x660, n); }
/* Whether govmm has served vCPU id's HLT (it is halted in govmm, its HLT
 * exit counted): the marker's port 0x678. The port's exits are left out of
 * every section. Only under govmm (govmm_vmm()). */
static inline int govmm_halted(u32 id) { outl(0x678, id); return inl(0x678) == 1; }
int govmm_vmm(void);                     /* CPUID 0x40000100 is govmm's signature */

/* ---- govmm's paravirtual leaves (package pvipi, pvsyscall) ---- */
int govmm_doorbell(void);                /* CPUID offers the SYSCALL doorbell */
int govmm_kvm_lapic(void);               /* the LAPIC is KVM's (govmm --lapic=kvm): the marker counts with KVM's statistics */

/* ---- boot information ---- */
extern const char guest_name[];          /* defined by each guest */
void test_main(void);                    /* defined by each guest */
extern int ncpus;                        /* fw_cfg key 0x05 */
void fw_cfg_read(u16 key, void *buf, int len); /* len bytes of item key */
const char *param(const char *key);      /* "key=value" word of the cmdline */
u32 param_u32(const char *key, u32 def); /* decimal or 0x-hex */
int streq(const char *a, const char *b);
void *memcpy(void *d, const void *s, unsigned n);
void *memset(void *d, int c, unsigned n);

/* ---- local APIC ---- */
#define APIC_ID    0x020
#define APIC_TPR   0x080
#define APIC_EOI   0x0B0
#define APIC_LDR   0x0D0
#define APIC_DFR   0x0E0
#define APIC_SVR   0x0F0
#define APIC_IRR   0x200
#define APIC_ICR   0x300
#define APIC_ICR2  0x310
#define APIC_LVTT  0x320
#define APIC_TMICT 0x380
#define APIC_TMCCT 0x390
#define APIC_TDCR  0x3E0
#define ICR_LOGICAL  0x800
#define ICR_LOWPRI   0x100
#define ICR_SELF     0x40000
#define ICR_NMI      0x400
#define ICR_ALLBUT   0xC0000

extern int x2apic;                       /* all CPUs use the same mode */
extern volatile u32 apic_acc[MAX_CPUS];  /* APIC accesses made, per CPU index */
u32 apic_read(u32 reg);                  /* each call = exactly 1 access */
void apic_write(u32 reg, u32 v);         /* each call = exactly 1 access */
static inline void apic_eoi(void) { apic_write(APIC_EOI, 0); }
u32 apic_id(void);
void apic_icr(u32 dest, u32 lo);         /* xAPIC: 3 accesses, x2APIC: 1 */
void apic_icr_short(u32 lo);             /* shorthand: xAPIC 2, x2APIC 1 */
void apic_self_ipi(u32 vec);             /* xAPIC 2 (shorthand), x2APIC 1 (MSR 0x83F) */
int has_x2apic(void);
int x2apic_enable(void);                 /* this CPU: APIC_BASE EN|EXTD; 0 if absent */
void bsp_apic_setup(void);               /* BSP: SVR, TPR 0, flat LDR (xAPIC), ID 0 */
#define APIC_ISR   0x100
#define APIC_TMR   0x180

/* ---- IOAPIC (0xFEC00000) ---- */
#define IOAPIC_BASE 0xFEC00000u
#define IOAPIC_EOI  0x40                 /* version 0x20 EOI register */
static inline u32 ioapic_read(u32 idx)   /* 2 MMIO accesses */
{
	*(volatile u32 *)IOAPIC_BASE = idx;
	return *(volatile u32 *)(IOAPIC_BASE + 0x10);
}
static inline void ioapic_write(u32 idx, u32 v) /* 2 MMIO accesses */
{
	*(volatile u32 *)IOAPIC_BASE = idx;
	*(volatile u32 *)(IOAPIC_BASE + 0x10) = v;
}
static inline void ioapic_set_rte(int pin, u64 rte) /* 4 accesses, high first */
{
	ioapic_write(0x11 + 2 * pin, (u32)(rte >> 32));
	ioapic_write(0x10 + 2 * pin, (u32)rte);
}
static inline u64 ioapic_get_rte(int pin)           /* 4 accesses */
{
	u32 lo = ioapic_read(0x10 + 2 * pin);
	return (u64)ioapic_read(0x11 + 2 * pin) << 32 | lo;
}
#define RTE_LOGICAL  (1u << 11)
#define RTE_DSTAT    (1u << 12)
#define RTE_LOWACT   (1u << 13)
#define RTE_RIRR     (1u << 14)
#define RTE_LEVEL    (1u << 15)
#define RTE_MASKED   (1u << 16)
/* pc-testdev: ISA/IOAPIC line n to level v */
static inline void line(int n, int v) { outb(0x2000 + n, v); }

/* Sleep until cond; IF=0 between the test and hlt so no wake-up is lost. */
#define WAIT_IRQ(cond, secs) ({                                          \
	u64 _end = rdtsc() + (u64)(secs) * TSC_SEC;                      \
	cli();                                                           \
	while (!(cond) && rdtsc() < _end)                                \
		asm volatile("sti; hlt; cli" ::: "memory");              \
	sti();                                                           \
	(cond) ? 1 : 0; })

/* ---- SMP ---- */
extern volatile u32 cpu_apicid[MAX_CPUS];/* by CPU index, filled by the guest */
int this_cpu(void);                      /* CPU index: 0 = BSP, APs by arrival */
void smp_boot(void (*fn)(int idx));      /* INIT + SIPI all-but-self; APs run fn */
/* 0 (default): an AP's CPU index and stack slot is its arrival order, one
 * new slot per start (MAX_CPUS starts in all). 1: its initial APIC ID
 * (< 256, the BSP's ID 0 being its own slot 0), the same slot at every
 * start: for a guest that INITs and restarts CPUs without end (fuzz). */
extern volatile u32 ap_slot_by_id;

#endif
#endif
