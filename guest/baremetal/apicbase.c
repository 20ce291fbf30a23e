/* apicbase: IA32_APIC_BASE as the architecture defines it (SDM 11.4.4):
 * CPUID.1:EDX.APIC follows APIC_BASE.EN (0 while the APIC is disabled),
 * and the bits at and above MAXPHYADDR (CPUID 0x80000008 EAX[7:0]) are
 * reserved: writing one raises #GP. No parameters.
 *
 * Without an in-kernel APIC, KVM answers CPUID itself from its own copy of
 * APIC_BASE, so govmm must hand it every value it accepts. */
#include "rt.h"

const char guest_name[] = "apicbase";

#define MSR_APIC_BASE 0x1B
#define BASE_EN (1u << 11)

static volatile u32 gp_count;

static void on_gp(struct frame *f)
{
	gp_count++;
	f->eip += 2;                    /* skip the WRMSR (0F 30) */
}

static int cpuid_apic(void)
{
	u32 r[4];

	cpuid(1, r);
	return (r[3] >> 9) & 1;
}

void test_main(void)
{
	u32 r[4];
	u64 base = rdmsr(MSR_APIC_BASE);

	isr_table[13] = on_gp;
	check(cpuid_apic(), "CPUID.1:EDX.APIC is set with the APIC enabled", "base %x", (u32)base);
	wrmsr(MSR_APIC_BASE, base & ~(u64)BASE_EN);
	check(!cpuid_apic(), "CPUID.1:EDX.APIC reads 0 while APIC_BASE.EN is clear", "still set");
	wrmsr(MSR_APIC_BASE, base);
	check(cpuid_apic(), "CPUID.1:EDX.APIC is back after re-enabling", "still clear");

	cpuid(0x80000000, r);
	if (r[0] < 0x80000008) {
		ok("no CPUID 0x80000008: MAXPHYADDR check skipped");
		return;
	}
	cpuid(0x80000008, r);
	u32 maxphys = r[0] & 0xFF;
	printf("# MAXPHYADDR %u\n", maxphys);
	if (maxphys >= 52) {
		ok("MAXPHYADDR 52: no reserved address bit to try");
		return;
	}
	gp_count = 0;
	wrmsr(MSR_APIC_BASE, base | 1ull << maxphys);
	check(gp_count == 1 && rdmsr(MSR_APIC_BASE) == base, "APIC_BASE bit MAXPHYADDR is reserved (#GP)",
	      "%u #GP, base now %x:%x", gp_count, (u32)(rdmsr(MSR_APIC_BASE) >> 32), (u32)rdmsr(MSR_APIC_BASE));
	wrmsr(MSR_APIC_BASE, base | 1ull << (maxphys - 1) | 0);
	check(gp_count == 1, "APIC_BASE bit MAXPHYADDR-1 is an address bit", "%u #GP", gp_count);
	wrmsr(MSR_APIC_BASE, base);
}
