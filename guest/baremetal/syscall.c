/* syscall: SYSCALL from user mode (CPL3) into a 64-bit kernel entry, checked
 * against the architecture (Intel SDM vol. 2B, SYSCALL): CS = STAR[47:32],
 * SS = STAR[47:32] + 8, CPL 0, RCX = the instruction after SYSCALL, R11 =
 * the user RFLAGS, RFLAGS = R11 & ~FMASK (entryflags=X: the RFLAGS this
 * host really gives instead).
 *
 * On hosts whose KVM interprets kernel code, SYSCALL reaches LSTAR still at
 * CPL3 (docs/hosts.md); when govmm's CPUID offers the SYSCALL doorbell (package
 * pvsyscall) the guest does what govmm's Linux patch does: LSTAR points at a
 * user-executable trampoline whose first instruction is the ABI's store,
 * mov %al, disp32(%rip), to an alias of the doorbell page, and the real
 * entry goes to MSR 0x4D564F51; govmm completes the transition. Elsewhere
 * LSTAR is the entry itself. Either way the entry must see the same state.
 * Before user mode the guest also writes the doorbell from CPL0, which govmm
 * must ignore. */
#include "rt.h"

const char guest_name[] = "syscall";

#define STAR_KERNEL 0x18u       /* CS; SS = 0x20 */
#define STAR_USER   0x20u       /* SYSRET: SS = 0x28|3, CS = 0x30|3 */
#define FMASK       0x40700u    /* AC DF IF TF */
#define USER_RFLAGS 0x40AD7u    /* as in syscall64.S */
#define MSR_SYSCALL_ENTRY 0x4D564F51u
#define USER_PAGE   0x400000u   /* the one user-accessible 2 MiB page */
#define DOORBELL    0xFEB00000u /* pvsyscall.DoorbellGPA */
#define DOORBELL_VA 0x700000u   /* an alias of it within 2 GiB of the trampoline */
#define USER(sym)   ((u32)(sym) - (u32)sc_user_start + USER_PAGE)

u64 idt64[256 * 2] __attribute__((aligned(16)));
static u64 pml4[512] __attribute__((aligned(4096)));
static u64 pdpt[512] __attribute__((aligned(4096)));
static u64 pd[4][512] __attribute__((aligned(4096)));
static u8 kstack[4096] __attribute__((aligned(16)));

struct rec { u64 rcx, r11, rflags, cs, ss, rsp, pad[2]; };
extern volatile struct rec sc_rec[2];
extern volatile u32 sc_count, tss64[26];
extern volatile u64 sc_fault_vec, sc_fault_frame[6], gdt64[9];
extern volatile u64 sc_bp_rsp, sc_bp_rip, sc_bp_cs;
extern char sc_bp[], sc_user_bp[];
extern volatile u64 sc_user_entry, sc_user_stack;
extern char sc_user_start[], sc_user_end[];
extern char sc_entry[], sc_tramp[], sc_user_ret1[], sc_user_ret2[], sc_stubs[];
void run_syscall64(u64 *pml4);

void test_main(void)
{
	/* Identity map of 4 GiB, PCD|PWT from 3 GiB (MMIO); supervisor-only
	 * except the user page (user code, trampoline, stack) and the
	 * doorbell's page, as Linux maps them. */
	for (int i = 0; i < 2048; i++) {
		int user = i == USER_PAGE >> 21 || i == DOORBELL >> 21;
		pd[i >> 9][i & 511] = (u64)i << 21 | 0x83 | (user ? 4 : 0) | (i >= 1536 ? 0x18 : 0);
	}
	/* The doorbell's 2 MiB page again at DOORBELL_VA, near the trampoline
	 * (Linux's fixmap has both within 2 GiB too). */
	pd[0][DOORBELL_VA >> 21] = (DOORBELL & ~0x1FFFFFu) | 0x83 | 4 | 0x18;
	memcpy((void *)USER_PAGE, sc_user_start, sc_user_end - sc_user_start);
	sc_user_entry = USER_PAGE;
	sc_user_stack = USER_PAGE + 0x10000;
	for (int i = 0; i < 4; i++)
		pdpt[i] = (u32)pd[i] | 7;
	pml4[0] = (u32)pdpt | 7;
	/* The #BP gate has DPL 3, as Linux's: int3 is a software interrupt,
	 * and from CPL3 through a DPL 0 gate the CPU raises #GP(3 * 8 + 2)
	 * instead (measured on the nested hosts). The emulating host this was
	 * first written on never checked: govmm injected #BP as an exception. */
	for (int v = 0; v < 32; v++) {
		u32 a = v == 3 ? (u32)sc_bp : (u32)sc_stubs + 16 * v;
		u32 dpl = v == 3 ? 3 : 0;
		idt64[2 * v] = (a & 0xffff) | 0x18u << 16 | (u64)((a & 0xffff0000) | 0x8E00 | dpl << 13) << 32;
		idt64[2 * v + 1] = 0;
	}
	u32 tss = (u32)tss64;
	tss64[1] = (u32)kstack + sizeof(kstack);           /* RSP0 */
	tss64[25] = 104u << 16;                             /* no I/O bitmap */
	gdt64[7] = 103 | (u64)(tss & 0xffffff) << 16 | 0x89ull << 40 | (u64)(tss >> 24) << 56;
	gdt64[8] = 0;

	static volatile u64 gs_target = 0x600DC0DE;
	wrmsr(0xC0000102, (u32)&gs_target);             /* KERNEL_GS_BASE */
	wrmsr(0xC0000101, 0);                            /* GS_BASE */
	int doorbell = govmm_doorbell();
	wrmsr(0xC0000081, (u64)(STAR_USER << 16 | STAR_KERNEL) << 32);
	wrmsr(0xC0000084, FMASK);
	if (doorbell) {
		wrmsr(MSR_SYSCALL_ENTRY, (u32)sc_entry);
		wrmsr(0xC0000082, USER(sc_tramp));
		printf("# govmm offers the SYSCALL doorbell: LSTAR = trampoline %x, entry %x\n",
		       USER(sc_tramp), (u32)sc_entry);
	} else {
		wrmsr(0xC0000082, (u32)sc_entry);
		printf("# no SYSCALL doorbell: LSTAR = entry %x\n", (u32)sc_entry);
	}
	run_syscall64(pml4);
	ok("long mode, user mode and back");
	for (u32 i = 0; i < 2 && i < sc_count; i++) {
		volatile struct rec *r = &sc_rec[i];
		printf("# SYSCALL %u: cs %x ss %x rcx %x:%x r11 %x:%x rflags %x:%x\n", i + 1,
		       (u32)r->cs, (u32)r->ss, (u32)(r->rcx >> 32), (u32)r->rcx,
		       (u32)(r->r11 >> 32), (u32)r->r11, (u32)(r->rflags >> 32), (u32)r->rflags);
	}
	if (sc_fault_vec != 0xFFFF)
		die("no exception", "vector %u; frame %x:%x %x:%x %x:%x %x:%x", (u32)sc_fault_vec,
		    (u32)(sc_fault_frame[1] >> 32), (u32)sc_fault_frame[1],
		    (u32)(sc_fault_frame[0] >> 32), (u32)sc_fault_frame[0],
		    (u32)(sc_fault_frame[2] >> 32), (u32)sc_fault_frame[2],
		    (u32)(sc_fault_frame[3] >> 32), (u32)sc_fault_frame[3]);
	check(sc_count == 2, "both SYSCALLs reached the kernel entry", "%u did", sc_count);
	extern volatile u64 sc_gsword;
	check(sc_gsword == 0x600DC0DE, "SWAPGS at the entry gives the kernel's GS base",
	      "read %x:%x through GS", (u32)(sc_gsword >> 32), (u32)sc_gsword);
	u32 ktop = (u32)kstack + sizeof(kstack);
	printf("# #BP from user mode: rsp %x:%x (RSP0 %x) frame cs %x rip %x\n", (u32)(sc_bp_rsp >> 32),
	       (u32)sc_bp_rsp, ktop, (u32)sc_bp_cs, (u32)sc_bp_rip);
	check(sc_bp_rsp == ktop - 40, "#BP from CPL3 after SYSRET switched to TSS.RSP0",
	      "rsp %x:%x, want %x", (u32)(sc_bp_rsp >> 32), (u32)sc_bp_rsp, ktop - 40);
	check(sc_bp_cs == 0x33 && sc_bp_rip == USER(sc_user_bp), "#BP frame: CS 0x33, RIP after int3",
	      "cs %x rip %x", (u32)sc_bp_cs, (u32)sc_bp_rip);
	u32 ret[2] = { USER(sc_user_ret1), USER(sc_user_ret2) };
	for (u32 i = 0; i < 2 && i < sc_count; i++) {
		volatile struct rec *r = &sc_rec[i];
		check((r->cs & 0xffff) == STAR_KERNEL, "CS = STAR[47:32], CPL 0", "cs %x", (u32)r->cs);
		check((r->ss & 0xffff) == STAR_KERNEL + 8, "SS = STAR[47:32] + 8", "ss %x", (u32)r->ss);
		check(r->rcx == ret[i], "RCX = the instruction after SYSCALL", "rcx %x:%x, want %x",
		      (u32)(r->rcx >> 32), (u32)r->rcx, ret[i]);
		check(r->r11 == USER_RFLAGS, "R11 = the user RFLAGS", "r11 %x:%x, want %x",
		      (u32)(r->r11 >> 32), (u32)r->r11, USER_RFLAGS);
		/* entryflags=: what this host really leaves (QEMU's TCG loses the
		 * arithmetic flags: 0x2; tests/syscall_test.go). */
		u32 want_fl = param_u32("entryflags", USER_RFLAGS & ~FMASK);
		check(r->rflags == want_fl, "RFLAGS at the entry = user RFLAGS & ~FMASK (or entryflags=)",
		      "rflags %x:%x, want %x", (u32)(r->rflags >> 32), (u32)r->rflags, want_fl);
	}
}
