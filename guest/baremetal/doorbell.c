/* doorbell: forged SYSCALL doorbells (package pvsyscall) must complete no
 * transition. No parameters; needs govmm's SYSCALL doorbell (an emulating
 * host, or govmm told to offer it).
 *
 * Set up as the syscall guest (LSTAR = a user-executable trampoline whose
 * first instruction is the ABI's store, mov %al, disp32(%rip), to an alias
 * of the doorbell page; MSR 0x4D564F51 = the real entry; Linux's FMASK),
 * then at CPL3 (doorbell64.S): stores to the doorbell page from user code
 * with made-up RCX and R11 (IOPL 3, IF 0, VM, ...), jumps into the
 * trampoline with forged R11, a store and a SYSCALL with the doorbell not
 * armed, and, with a FMASK that leaves IF alone (so that only govmm's R11
 * rule can tell), jumps with R11 holding IOPL, VM, RF, VIF, VIP, reserved
 * bits or bit 1 clear, and RCX not canonical. Every one must fault with
 * #GP(0) reported right after the store, at CPL3 with IF=1, and none may
 * reach the kernel entry. A read of the page gives all ones; a write from
 * CPL0 is ignored. Genuine SYSCALLs (one entered with RFLAGS.RF=1, one with
 * the second FMASK) must still arrive with the architectural state. */
#include "rt.h"

const char guest_name[] = "doorbell";

#define STAR_KERNEL 0x18u       /* CS; SS = 0x20 */
#define STAR_USER   0x20u       /* SYSRET: SS = 0x28|3, CS = 0x30|3 */
#define FMASK_LINUX 0x257FD5u   /* arch/x86/kernel/cpu/common.c */
#define FMASK2      0xFFFFFDFDu /* as in doorbell64.S */
#define MSR_SYSCALL_ENTRY 0x4D564F51u
#define USER_PAGE   0x400000u   /* the user-accessible 2 MiB page */
#define DOORBELL    0xFEB00000u /* pvsyscall.DoorbellGPA */
#define DOORBELL_VA 0x700000u   /* an alias of it within 2 GiB of the trampoline */
#define USER(sym)   ((u32)(sym) - (u32)db_user_start + USER_PAGE)
#define RFLAGS_IF   0x200u

u64 idt64[256 * 2] __attribute__((aligned(16)));
static u64 pml4[512] __attribute__((aligned(4096)));
static u64 pdpt[512] __attribute__((aligned(4096)));
static u64 pd[4][512] __attribute__((aligned(4096)));
static u8 kstack[4096] __attribute__((aligned(16)));

struct hit { u64 rax, rcx, r11, rflags, cs, r15, r14, pad; };
struct fault { u64 vec, err, rip, cs, rflags, r14, r15, pad; };
extern volatile struct hit db_hit[8];
extern volatile struct fault db_fault_rec[32];
extern volatile u32 db_hits, db_faults, db_kwrites, db_nforge, db_tss[26];
extern volatile u64 db_gdt[9], db_user_entry, db_user_stack;
extern char db_user_start[], db_user_end[], db_tramp[], db_entry[], db_kcall[], db_stubs[];
void run_doorbell64(u64 *pml4);

static void gate(int v, void *handler, int dpl)
{
	u32 a = (u32)handler;
	idt64[2 * v] = (a & 0xffff) | 0x18u << 16 | (u64)((a & 0xffff0000) | 0x8E00 | dpl << 13) << 32;
	idt64[2 * v + 1] = 0;
}

void test_main(void)
{
	if (!govmm_doorbell())
		die("govmm offers the SYSCALL doorbell", "CPUID 0x40000101 has no doorbell bit");

	/* As the syscall guest: identity map of 4 GiB, PCD|PWT from 3 GiB;
	 * user-accessible only the user page and the doorbell's page, once
	 * where it is and once at DOORBELL_VA. */
	for (int i = 0; i < 2048; i++) {
		int user = i == USER_PAGE >> 21 || i == DOORBELL >> 21;
		pd[i >> 9][i & 511] = (u64)i << 21 | 0x83 | (user ? 4 : 0) | (i >= 1536 ? 0x18 : 0);
	}
	pd[0][DOORBELL_VA >> 21] = (DOORBELL & ~0x1FFFFFu) | 0x83 | 4 | 0x18;
	for (int i = 0; i < 4; i++)
		pdpt[i] = (u32)pd[i] | 7;
	pml4[0] = (u32)pdpt | 7;
	memcpy((void *)USER_PAGE, db_user_start, db_user_end - db_user_start);
	db_user_entry = USER_PAGE;
	db_user_stack = USER_PAGE + 0x10000;

	for (int v = 0; v < 32; v++)
		gate(v, db_stubs + 16 * v, 0);
	gate(3, db_kcall, 3);
	u32 tss = (u32)db_tss;
	db_tss[1] = (u32)kstack + sizeof(kstack);          /* RSP0 */
	db_tss[25] = 104u << 16;                            /* no I/O bitmap */
	db_gdt[7] = 103 | (u64)(tss & 0xffffff) << 16 | 0x89ull << 40 | (u64)(tss >> 24) << 56;
	db_gdt[8] = 0;

	wrmsr(0xC0000081, (u64)(STAR_USER << 16 | STAR_KERNEL) << 32);
	wrmsr(0xC0000084, FMASK_LINUX);
	wrmsr(MSR_SYSCALL_ENTRY, (u32)db_entry);
	wrmsr(0xC0000082, USER(db_tramp));
	printf("# trampoline %x, entry %x, %u forgeries\n", USER(db_tramp), (u32)db_entry, db_nforge);

	run_doorbell64(pml4);
	ok("long mode, user mode and back");

	u32 bad = 0;
	for (u32 i = 0; i < db_faults && i < 32; i++) {
		volatile struct fault *f = &db_fault_rec[i];
		int good = f->vec == 13 && f->err == 0 && f->cs == 0x33 && f->rip == f->r15 &&
			   f->r14 == i + 1 && (f->rflags & RFLAGS_IF);
		if (!good) {
			bad++;
			printf("# fault %u: vector %u error %x rip %x (want %x) cs %x rflags %x, attempt %x\n",
			       i + 1, (u32)f->vec, (u32)f->err, (u32)f->rip, (u32)f->r15, (u32)f->cs,
			       (u32)f->rflags, (u32)f->r14);
		}
	}
	check(db_faults == db_nforge, "every forgery faulted once", "%u faults for %u forgeries",
	      db_faults, db_nforge);
	check(bad == 0, "each with #GP(0) at CPL3, IF=1, RIP right after the store",
	      "%u did not (see above)", bad);

	static const u64 want_r11[3] = { 0x40AD7, 0x40AD7, 0x202 };
	static const u64 fmask[3] = { FMASK_LINUX, FMASK_LINUX, FMASK2 };
	for (u32 i = 0; i < db_hits && i < 8; i++) {
		volatile struct hit *h = &db_hit[i];
		printf("# entry %u: rax %x rcx %x r11 %x rflags %x cs %x\n", i + 1, (u32)h->rax,
		       (u32)h->rcx, (u32)h->r11, (u32)h->rflags, (u32)h->cs);
		if (h->rax >= 0xF000) {
			fail("no forgery reaches the kernel entry", "forgery %u did, rcx %x r11 %x:%x",
			     (u32)h->rax - 0xF000, (u32)h->rcx, (u32)(h->r11 >> 32), (u32)h->r11);
			continue;
		}
		if (i >= 3 || h->rax != 0x101 + i) {
			fail("genuine SYSCALLs arrive in order", "entry %u has rax %x", i + 1, (u32)h->rax);
			continue;
		}
		check(h->cs == STAR_KERNEL, "CS = STAR[47:32], CPL 0", "cs %x", (u32)h->cs);
		check(h->rcx == h->r15, "RCX = the instruction after SYSCALL", "rcx %x, want %x",
		      (u32)h->rcx, (u32)h->r15);
		check(h->r11 == want_r11[i], "R11 = the user RFLAGS, RF clear", "r11 %x:%x, want %x",
		      (u32)(h->r11 >> 32), (u32)h->r11, (u32)want_r11[i]);
		check(h->rflags == ((h->r11 & ~fmask[i]) | 2), "RFLAGS = R11 & ~FMASK",
		      "rflags %x, want %x", (u32)h->rflags, (u32)((h->r11 & ~fmask[i]) | 2));
	}
	check(db_hits == 3, "the 3 genuine SYSCALLs reached the entry, nothing else", "%u arrivals", db_hits);
	check(db_kwrites == 1, "a doorbell write from CPL0 is ignored", "%u", db_kwrites);
}
