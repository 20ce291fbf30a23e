/* int3: switch to 64-bit long mode (first 4 GiB identity-mapped with 2 MiB
 * pages, APIC page included), run int3 three times with a counting #BP
 * handler and check each returned right after its int3; then int $0x80
 * (interrupt gate), int $0x81 (trap gate) and int $0x82 (absent gate: #NP,
 * with the error code npcode=, default the SDM's 0x412).
 * On the development host int3 in 64-bit kernel mode is an emulation
 * failure: the VMM must advance RIP and inject #BP (vector 3). Then fwait
 * and popcnt (which the VMM completes there) and, with bad=1, an SSE
 * instruction the VMM does not complete: the VM must stop with an error. */
#include "rt.h"

const char guest_name[] = "int3";

u64 idt64[256 * 2] __attribute__((aligned(16)));
static u64 pml4[512] __attribute__((aligned(4096)));
static u64 pdpt[512] __attribute__((aligned(4096)));
static u64 pd[4][512] __attribute__((aligned(4096)));

extern volatile u32 bp_count, bp_rip[8], bp_rip_hi, popcnt_result, bad_insn;
extern volatile u32 intn_count, intn_vec[4], intn_rip[4], intn_cs[4], np_count, np_code, np_rip;
extern char bp64[], bad64[], int3_ret1[], int3_ret2[], int3_ret3[];
extern char intn80[], intn81[], np64[], intn_ret1[], intn_ret2[], intn_np[];
void run64(u64 *pml4);

/* type: 0x8E present interrupt gate, 0x8F present trap gate, 0x0E absent */
static void gate64t(int v, void *handler, u32 type)
{
	u32 a = (u32)handler;
	/* 64-bit gate, selector 0x18, no IST; offset[63:32] = 0 */
	idt64[2 * v] = (a & 0xffff) | 0x18u << 16 | (u64)((a & 0xffff0000) | type << 8) << 32;
	idt64[2 * v + 1] = 0;
}

static void gate64(int v, void *handler) { gate64t(v, handler, 0x8E); }

void test_main(void)
{
	u32 *want[3] = { (u32 *)int3_ret1, (u32 *)int3_ret2, (u32 *)int3_ret3 };

	for (int i = 0; i < 2048; i++)  /* P|RW|PS, PCD|PWT from 3 GiB (MMIO) */
		pd[i >> 9][i & 511] = (u64)i << 21 | 0x83 | (i >= 1536 ? 0x18 : 0);
	for (int i = 0; i < 4; i++)
		pdpt[i] = (u32)pd[i] | 3;
	pml4[0] = (u32)pdpt | 3;
	for (int v = 0; v < 32; v++)
		gate64(v, v == 3 ? bp64 : v == 11 ? np64 : bad64);
	gate64t(0x80, intn80, 0x8E);
	gate64t(0x81, intn81, 0x8F);
	gate64t(0x82, bad64, 0x0E);     /* not present */

	bad_insn = param_u32("bad", 0);
	run64(pml4);
	ok("long mode entered and left (compatibility mode)");
	check(bp_count == 3, "int3 handler ran 3 times", "ran %u times", bp_count);
	for (u32 i = 0; i < 3 && i < bp_count; i++) {
		printf("# int3 #%u returned to %x, want %x\n", i + 1, bp_rip[i], (u32)want[i]);
		if (bp_rip[i] != (u32)want[i] || bp_rip_hi)
			fail("int3 return address", "#%u: rip %x:%x, want the byte after int3 %x",
			     i + 1, bp_rip_hi, bp_rip[i], (u32)want[i]);
	}
	check(intn_count == 2, "int $0x80 and int $0x81 each ran their handler once", "%u handler runs", intn_count);
	for (u32 i = 0; i < 2 && i < intn_count; i++) {
		u32 wv = i ? 0x81 : 0x80, wr = (u32)(i ? intn_ret2 : intn_ret1);
		printf("# int $%x: handler %x returned to %x cs %x\n", wv, intn_vec[i], intn_rip[i], intn_cs[i]);
		check(intn_vec[i] == wv && intn_rip[i] == wr && intn_cs[i] == 0x18,
		      "int n went through its gate and returns right after the instruction",
		      "vector %x rip %x cs %x, want %x %x 18", intn_vec[i], intn_rip[i], intn_cs[i], wv, wr);
	}
	/* npcode=: the error code the host really gives (the SDM's vector * 8
	 * + 2 unless told: QEMU's TCG gives vector * 16 + 2, tests/int3_test.go). */
	u32 want_np = param_u32("npcode", 0x82 * 8 + 2);
	check(np_count == 1 && np_code == want_np && np_rip == (u32)intn_np,
	      "int $0x82 to an absent gate is #NP(npcode) at the int",
	      "%u #NP, code %x at %x (want 1, %x at %x)", np_count, np_code, np_rip, want_np, (u32)intn_np);
	check(popcnt_result == 8, "popcnt(0xF0F0) = 8 in 64-bit kernel mode", "got %u", popcnt_result);
	check(bp_count == 3 && bp_rip[0] == (u32)want[0] && bp_rip[1] == (u32)want[1] &&
	      bp_rip[2] == (u32)want[2] && !bp_rip_hi,
	      "execution continued right after each int3", "see above");
}
