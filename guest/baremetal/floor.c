/* floor: govmm's side of the exit-floor benchmark (govmm bench-exits). It
 * runs floorloop.S's loop, the same bytes the minimal C VMM of bench/floor
 * runs, for each kind of exit, reps times, each in its own accounting
 * section (port 0x660: 1 port, 2 mmio, 3 msr), and prints
 *   # floor kind=port|mmio|msr rep=I count=N cycles=0xT
 * cmdline: count=N (default 2000) reps=R (default 3). x2APIC is enabled
 * first (the MSR loop writes the x2APIC TPR). */
#include "rt.h"

const char guest_name[] = "floor";

static const char *const kinds[] = {"port", "mmio", "msr"};

static u64 floor_run(u32 kind, u32 count)
{
	u64 c;
	asm volatile("call floor_loop" : "=A"(c), "+c"(count) : "a"(kind) : "memory");
	return c;
}

void test_main(void)
{
	u32 count = param_u32("count", 2000), reps = param_u32("reps", 3);
	if (count == 0)
		die("count", "count=0: want 1 or more");
	if (!x2apic_enable())
		die("x2apic", "no x2APIC: the MSR loop writes the x2APIC TPR");
	for (u32 r = 0; r < reps; r++)
		for (u32 k = 0; k < 3; k++) {
			section(k + 1);
			u64 c = floor_run(k, count);
			section(0);
			printf("# floor kind=%s rep=%u count=%u cycles=0x%x%08x\n", kinds[k], r, count, (u32)(c >> 32), (u32)c);
		}
	ok("floor loops done");
}
