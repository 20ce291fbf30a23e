/* xsave: the XSAVE family in kernel mode (CPL0, 32-bit protected mode),
 * checked against the architecture (Intel SDM vol. 1 ch. 13, vol. 2
 * XSAVE/XSAVEC/XRSTOR/XGETBV/XSETBV). No parameters.
 *
 * On hosts whose KVM interprets kernel code every one of these instructions
 * is an emulation failure that govmm completes (vcpu/xsave.go); on hardware
 * virtualization the processor runs them. Either way the guest must see the
 * same: XCR0 starts at 1 and takes only valid values (#GP otherwise), a
 * misaligned area and a malformed header raise #GP, XSAVE and XSAVEC
 * store what XRSTOR loaded (standard and compacted form), and a component
 * whose XSTATE_BV bit is clear is restored to its initial state. Register
 * values are loaded and read only through XRSTOR and XSAVE themselves: that
 * host's emulator gets SSE moves wrong in 32-bit kernel mode (movdqu to
 * XMM0 reads back something else and writes memory it should not), and
 * wider registers are ustress's to check (in guest user space). */
#include "rt.h"

const char guest_name[] = "xsave";

#define CR4_OSXSAVE (1u << 18)
#define X87 1u
#define SSE 2u
#define YMM 4u

static u8 area[4096 + 64] __attribute__((aligned(64)));
static u8 area2[4096] __attribute__((aligned(64)));
static volatile u32 gp_count, ud_count, last_vec;
static volatile u32 skip;               /* bytes the faulting instruction has */

static void fault(struct frame *f)
{
	last_vec = f->vec;
	if (f->vec == 13)
		gp_count++;
	else
		ud_count++;
	f->eip += skip;                 /* resume after the instruction */
}

static u64 xgetbv(u32 ecx)
{
	u32 lo, hi;
	skip = 3;
	asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(ecx));
	return (u64)hi << 32 | lo;
}

static void xsetbv(u32 ecx, u64 v)
{
	skip = 3;
	asm volatile("xsetbv" :: "c"(ecx), "a"((u32)v), "d"((u32)(v >> 32)) : "memory");
}

/* xsave (%edi) is 0F AE 27: 3 bytes; xsavec (%edi) 0F C7 27; xrstor 0F AE 2F. */
static void xsave(void *p, u32 rfbm)
{
	skip = 3;
	asm volatile("xsave (%0)" :: "D"(p), "a"(rfbm), "d"(0) : "memory");
}

static void xsavec(void *p, u32 rfbm)
{
	skip = 3;
	asm volatile("xsavec (%0)" :: "D"(p), "a"(rfbm), "d"(0) : "memory");
}

static void xrstor(void *p, u32 rfbm)
{
	skip = 3;
	asm volatile("xrstor (%0)" :: "D"(p), "a"(rfbm), "d"(0) : "memory");
}

/* An area of the standard form with FCW, MXCSR at their initial values and
 * XMM0-7 = v, v+1, ... byte by byte; XSTATE_BV = x87 | SSE. */
static void fill(u8 *a, u8 v)
{
	for (int i = 0; i < 128; i++)
		a[160 + i] = v + i;
	*(u16 *)a = 0x37F;
	*(u32 *)(a + 24) = 0x1F80;
	*(u64 *)(a + 512) = X87 | SSE;
}

static int same(const u8 *a, const u8 *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static int zeros(const u8 *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i])
			return 0;
	return 1;
}

static u64 xstate_bv(const u8 *a) { return *(const u64 *)(a + 512); }

void test_main(void)
{
	u32 r[4], cr4;

	cpuid(1, r);
	if (!(r[2] & (1u << 26))) {
		ok("no XSAVE in CPUID.1:ECX: nothing to test");
		return;
	}
	isr_table[13] = fault;
	isr_table[6] = fault;

	/* CR4.OSXSAVE clear: #UD. */
	ud_count = 0;
	xgetbv(0);
	check(ud_count == 1 && last_vec == 6, "XGETBV with CR4.OSXSAVE clear raises #UD", "%u #UD, last vector %u", ud_count, last_vec);

	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	cr4 |= CR4_OSXSAVE;
	asm volatile("mov %0, %%cr4" :: "r"(cr4));
	cpuid(1, r);
	check(r[2] & (1u << 27), "CPUID.1:ECX.OSXSAVE follows CR4", "ECX %x", r[2]);

	check(xgetbv(0) == X87, "XCR0 is 1 after reset", "XCR0 %x", (u32)xgetbv(0));
	gp_count = 0;
	xsetbv(0, SSE);                 /* x87 bit clear */
	xsetbv(0, X87 | YMM);           /* YMM without SSE */
	xsetbv(1, X87);                 /* no XCR1 to set */
	xsetbv(0, X87 | (1u << 8));     /* bit 8: a supervisor component, never in XCR0 */
	check(gp_count == 4 && xgetbv(0) == X87, "XSETBV refuses 4 invalid writes with #GP, XCR0 unchanged",
	      "%u #GP, XCR0 %x", gp_count, (u32)xgetbv(0));
	xsetbv(0, X87 | SSE);
	check(xgetbv(0) == (X87 | SSE), "XSETBV x87|SSE", "XCR0 %x", (u32)xgetbv(0));

	/* Standard form: XRSTOR an area whose XMM0-7 hold a pattern, XSAVE
	 * into a second one: the pattern is what it stores. */
	memset(area, 0, sizeof area);
	fill(area, 0xA0);
	xrstor(area, X87 | SSE);
	memset(area2, 0xEE, sizeof area2);
	*(u64 *)(area2 + 512) = 0;
	xsave(area2, X87 | SSE);
	check(same(area2 + 160, area + 160, 128), "XRSTOR then XSAVE: XMM0-7 as loaded", "XMM0 %x, want %x",
	      *(u32 *)(area2 + 160), *(u32 *)(area + 160));
	check(*(u16 *)area2 == 0x37F && *(u32 *)(area2 + 24) == 0x1F80, "XRSTOR then XSAVE: FCW and MXCSR as loaded",
	      "FCW %x MXCSR %x", *(u16 *)area2, *(u32 *)(area2 + 24));
	check((xstate_bv(area2) & SSE) != 0, "XSAVE marks SSE in use in XSTATE_BV", "XSTATE_BV %x", (u32)xstate_bv(area2));
	check(area2[450] == 0xEE, "XSAVE leaves legacy bytes 416-511 alone", "byte 450 = %x", area2[450]);

	/* XSTATE_BV[1] clear: SSE to its initial state (XMM0-7 zero). */
	*(u64 *)(area + 512) = X87;
	xrstor(area, X87 | SSE);
	xsave(area2, X87 | SSE);
	check((xstate_bv(area2) & SSE) == 0 || zeros(area2 + 160, 128),
	      "XRSTOR with XSTATE_BV.SSE clear puts XMM0-7 in their initial state", "XMM0 %x", *(u32 *)(area2 + 160));

	/* rfbm = x87 only: SSE is left as it is. */
	*(u64 *)(area + 512) = X87 | SSE;
	xrstor(area, X87 | SSE);        /* the pattern again */
	fill(area, 0x10);
	xrstor(area, X87);              /* must not load XMM */
	xsave(area2, X87 | SSE);
	check(area2[160] == 0xA0, "XRSTOR with EDX:EAX = x87 leaves XMM0", "XMM0 byte 0 = %x", area2[160]);

	/* #GP: misaligned area; XSTATE_BV bit outside XCR0; reserved header bytes. */
	gp_count = 0;
	fill(area, 0x30);
	xsave(area + 16, X87 | SSE);
	xrstor(area + 16, X87 | SSE);
	memcpy(area2, area, 1024);
	*(u64 *)(area2 + 512) |= YMM;   /* not in XCR0 */
	xrstor(area2, X87 | SSE);
	memcpy(area2, area, 1024);
	area2[512 + 20] = 1;            /* bytes 16-23 of the header must be 0 */
	xrstor(area2, X87 | SSE);
	check(gp_count == 4, "misaligned XSAVE and XRSTOR, and two malformed headers, raise #GP", "%u #GP", gp_count);

	/* Compacted form: XSAVEC writes XCOMP_BV = RFBM | bit 63; XRSTOR reads it. */
	cpuid(0xD, r);
	{
		u32 s[4];
		asm volatile("cpuid" : "=a"(s[0]), "=b"(s[1]), "=c"(s[2]), "=d"(s[3]) : "a"(0xD), "c"(1));
		if (!(s[0] & 2)) {
			ok("no XSAVEC in CPUID.(0xD,1): compacted form not tested");
			return;
		}
	}
	memset(area2, 0, sizeof area2);
	fill(area, 0xC0);
	*(u64 *)(area + 512) = X87 | SSE;
	xrstor(area, X87 | SSE);
	xsavec(area2, X87 | SSE);
	check(*(u32 *)(area2 + 524) == 0x80000000u && (*(u32 *)(area2 + 520) & 3) == 3,
	      "XSAVEC writes XCOMP_BV = RFBM | 1<<63", "XCOMP_BV %x:%x", *(u32 *)(area2 + 524), *(u32 *)(area2 + 520));
	check(same(area2 + 160, area + 160, 128), "XSAVEC stores XMM0-7", "XMM0 %x", *(u32 *)(area2 + 160));
	fill(area, 0x10);
	xrstor(area, X87 | SSE);        /* something else */
	xrstor(area2, X87 | SSE);       /* the compacted area */
	xsave(area, X87 | SSE);
	check(area[160] == 0xC0, "XRSTOR of a compacted area loads it", "XMM0 byte 0 = %x", area[160]);
}
