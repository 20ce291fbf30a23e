/* msrgp: no interrupt is lost when an MSR access faults. The BSP reads an
 * MSR nobody implements, over and over, with interrupts on and a #GP
 * handler that skips the RDMSR; meanwhile the AP sends it IPIs one at a
 * time, each waiting until the BSP's handler has taken it. Every IPI must
 * arrive: count=N (default 2000) sent, N taken, as many #GPs as RDMSRs.
 * The BSP's LAPIC timer runs periodically at the same time (vector 0x41,
 * about every 1.6 ms): the test compares the ticks the guest took with the
 * timer vectors govmm injected, which must be equal.
 *
 * Why it can fail: govmm answers the unknown MSR with an error, and KVM
 * queues #GP for the next entry. An interrupt govmm injected with
 * KVM_INTERRUPT for that same entry is not delivered (the exception goes
 * first and the interrupt queue is cleared at the next exit), while the
 * LAPIC already moved the vector to ISR: it is lost, and with it every
 * vector of its priority class or lower. govmm must ask for an interrupt
 * window instead (vcpu: interruptAllowed). x2APIC, 2 vCPUs. */
#include "rt.h"

const char guest_name[] = "msrgp";

#define V_IPI  0x40
#define V_TIMER 0x41
#define LVT_PERIODIC 0x20000
#define LVT_MASKED   0x10000
#define MSR_NONE 0x4D564FFFu            /* in govmm's range, claimed by nobody */

static volatile u32 taken, ticks, gps, rdmsrs, sent, stop, ap_ok;

static void on_ipi(struct frame *f)
{
	taken++;
	apic_eoi();
}

static void on_timer(struct frame *f)
{
	ticks++;
	apic_eoi();
}

static void on_gp(struct frame *f)
{
	gps++;
	f->eip += 2;                    /* skip the faulting RDMSR (0F 32) */
}

static void ap_main(int idx)
{
	u32 n = param_u32("count", 2000);

	x2apic_enable();
	apic_write(APIC_SVR, 0x1FF);
	ap_ok = 1;
	for (u32 i = 0; i < n; i++) {
		u32 before = taken;
		apic_icr(0, V_IPI);     /* fixed, physical, to APIC ID 0 */
		sent++;
		if (!WAIT(taken != before, 10))
			break;          /* lost: the BSP reports it */
	}
	stop = 1;
}

void test_main(void)
{
	u32 n = param_u32("count", 2000);

	if (!x2apic_enable())
		die("x2apic", "no x2APIC in CPUID");
	bsp_apic_setup();
	isr_table[V_IPI] = on_ipi;
	isr_table[13] = on_gp;
	isr_table[V_TIMER] = on_timer;
	if (ncpus < 2)
		die("cpus", "needs 2 vCPUs, has %u", ncpus);
	smp_boot(ap_main);
	if (!WAIT(ap_ok, 60))
		die("ap", "the AP did not start");
	apic_write(APIC_TDCR, 0x3);     /* divide by 16: 100,000 counts = 1.6 ms at 1 GHz */
	apic_write(APIC_LVTT, LVT_PERIODIC | V_TIMER);
	apic_write(APIC_TMICT, 100000);
	sti();
	u64 end = rdtsc() + 600 * TSC_SEC;
	while (!stop && rdtsc() < end) {
		rdmsrs++;
		asm volatile("rdmsr" :: "c"(MSR_NONE) : "eax", "edx", "memory");
	}
	cli();
	apic_write(APIC_LVTT, LVT_MASKED);
	apic_write(APIC_TMICT, 0);
	printf("# %u IPIs sent, %u taken, %u RDMSRs, %u #GP, %u timer ticks\n", sent, taken, rdmsrs, gps, ticks);
	check(ticks > 0, "the LAPIC timer fired during the RDMSR loop", "no tick");
	check(sent == n && taken == n, "every IPI sent while RDMSR faulted was taken",
	      "sent %u of %u, taken %u", sent, n, taken);
	check(gps == rdmsrs, "every RDMSR of the unknown MSR raised #GP", "%u #GP, %u RDMSRs", gps, rdmsrs);
}
