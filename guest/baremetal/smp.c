/* smp: start every AP with INIT + SIPI (xAPIC, all-excluding-self shorthand:
 * 2 ICR writes in all) and check each one arrives once with a distinct APIC
 * ID in 0..n-1. No parameters. */
#include "rt.h"

const char guest_name[] = "smp";

static volatile u32 arrived;

static void ap_main(int idx)
{
	cpu_apicid[idx] = apic_id();
	atomic_inc(&arrived);
	/* then cli; hlt forever (ap_entry) */
}

void test_main(void)
{
	static u8 seen[MAX_CPUS];
	u32 n = ncpus, bad = 0;

	apic_write(APIC_SVR, 0x1FF);
	cpu_apicid[0] = apic_id();
	if (n > 1) {
		smp_boot(ap_main);
		WAIT(arrived == n - 1, 60);
	}
	/* An AP started twice (or a stray CPU) would show up as an extra count. */
	delay(TSC_SEC / 20);
	check(arrived == n - 1, "all APs arrived", "%u of %u APs arrived", arrived, n - 1);
	for (u32 i = 0; i < n && i <= arrived; i++) {
		u32 id = cpu_apicid[i];
		if (id >= n || seen[id]) {
			if (!bad++)
				fail("apic ids", "cpu index %u has APIC ID %u (duplicate or >= %u)", i, id, n);
			continue;
		}
		seen[id] = 1;
	}
	if (!bad)
		printf("ok apic ids: %u distinct in 0..%u\n", n, n - 1);
}
