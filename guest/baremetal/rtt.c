/* rtt: the IPI round trip, end to end. The BSP writes the ICR (or govmm's
 * PV send-IPI MSR) for APIC ID 1; the receiver's handler EOIs and bumps a
 * counter in memory; the BSP spins until it sees it. The guest's TSC
 * cycles from before the send to the sight of the acknowledgement are one
 * round trip.
 *
 * cmdline: mode=xapic-phys|xapic-flat|xapic-cluster|x2apic-phys|x2apic-cluster|pv
 *          rounds=R (default 200)  gap=G (TSC cycles between round trips,
 *          default 100000)  pveoi=1
 *
 * Accounting sections (port 0x660), BSP only writes the markers:
 *   1 halted    the receiver waits in "sti; hlt" between IPIs: each IPI
 *               wakes a halted vCPU (the VMM's wake-up path; its halt lasts
 *               about gap, which is what halt polling's window learns)
 *   2 spinning  the receiver spins in guest code with IF=1: each IPI finds
 *               it running (the VMM's kick path)
 * After each round trip the BSP waits gap cycles, so that a halted
 * receiver is back in HLT before the next IPI. Other APs (if any) halt
 * with nothing sent to them. Each section prints
 *   # rtt receiver=halted|spinning mode=M rounds=R gap=G cycles_total=0xT cycles_min=A cycles_max=B
 * and the guest passes when every IPI was acknowledged exactly once. */
#include "apicmode.h"

const char guest_name[] = "rtt";

#define V_RTT 0x50

static volatile u32 acks;               /* handler runs on the receiver */
static volatile u32 spin_mode, spinning, ready;
static u32 pv_bitmap[2] __attribute__((aligned(8)));

static void on_rtt(struct frame *f)
{
	(void)f;
	eoi_pv(this_cpu());
	acks++;
}

static void send_rtt(void)
{
	if (mode == PV) {
		pv_bitmap[0] = 1u << 1;
		pv_send_ipi(V_RTT, 1, pv_bitmap);
		return;
	}
	icr_to(1, V_RTT);
}

static void ap_main(int idx)
{
	cpu_apicid[idx] = setup_cpu(idx);
	atomic_inc(&ready);
	if (cpu_apicid[idx] != 1)
		for (;;)
			asm volatile("sti; hlt");
	for (;;) {
		if (spin_mode) {        /* section 2: stay in guest code, IF=1 */
			sti();
			spinning = 1;
			while (spin_mode)
				pause();
			spinning = 0;
		}
		asm volatile("sti; hlt");
	}
}

/* One section of rounds round trips, and its line. */
static void measure(u32 sec, const char *receiver, u32 rounds, u64 gap)
{
	u64 total = 0, lo = ~0ull, hi = 0;
	u32 base = acks;
	section(sec);
	for (u32 r = 0; r < rounds; r++) {
		u64 t0 = rdtsc();
		send_rtt();
		while (acks != base + r + 1)
			pause();
		u64 d = rdtsc() - t0;
		total += d;
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		delay(gap);
	}
	section(0);
	/* No 64-bit division here (no libgcc): the total goes out in hex. */
	printf("# rtt receiver=%s mode=%s rounds=%u gap=%u cycles_total=0x%x%08x cycles_min=%u cycles_max=%u\n",
	       receiver, mode_names[mode], rounds, (u32)gap, (u32)(total >> 32), (u32)total, (u32)lo, (u32)hi);
	delay(gap);
	check(acks == base + rounds, "every round trip acknowledged once", "%u acks for %u IPIs", acks - base, rounds);
}

void test_main(void)
{
	mode_parse();
	u32 rounds = param_u32("rounds", 200);
	u64 gap = param_u32("gap", 100000);
	mode_require();
	if (ncpus < 2)
		die("cpus", "rtt needs 2 vCPUs or more, has %u", ncpus);
	isr_table[V_RTT] = on_rtt;
	setup_bsp();
	smp_boot(ap_main);
	if (!WAIT(ready == (u32)ncpus - 1, 60))
		die("ap bring-up", "%u of %u APs ready", ready, ncpus - 1);
	check_cpus();
	if (!member(1))
		die("member", "APIC ID 1 has no logical ID in mode %s", mode_names[mode]);
	printf("ok %u cpus up, mode %s, receiver APIC ID 1\n", ncpus, mode_names[mode]);
	delay(gap);
	measure(1, "halted", rounds, gap);
	spin_mode = 1;
	send_rtt();                     /* leave hlt, then spin */
	if (!WAIT(spinning, 10))
		die("spin", "the receiver does not spin");
	measure(2, "spinning", rounds, gap);
	spin_mode = 0;
}
