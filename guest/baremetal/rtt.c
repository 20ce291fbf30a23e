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
 *     recv_hlts=H recv_eois=E recv_pv_eois=P cycles_median=M
 * and the guest passes when every IPI was acknowledged exactly once. The
 * round trips themselves are rttloop.S's, the same instructions the floor
 * C VMM (bench/floor) runs: the sender's loop, the receiver's wait and the
 * handler, installed in the IDT directly. */
#include "apicmode.h"

const char guest_name[] = "rtt";

#define V_RTT 0x50

/* rttloop.S: the round trip's code, shared with the floor C VMM. */
extern volatile u32 rtt_acks, rtt_hlts, rtt_ack_hlts, rtt_spin;
extern void (*rtt_eoi)(void);
extern u32 rtt_send_kind, rtt_send_dest, rtt_send_lo;
extern u32 *rtt_samples, rtt_samples_cap;
u64 rtt_measure(u32 rounds, u32 gap, u32 minmax[2]);
void rtt_receive(void) __attribute__((noreturn));
void rtt_isr(void), rtt_eoi_x2apic(void), rtt_eoi_xapic(void);

extern u64 idt[256];

static volatile u32 ready;               /* APs set up */

/* Each round trip's cycles, for the first SAMPLES of a section
 * (rttloop.S), and their median: one L1 timer tick landing in a round
 * trip (a million cycles in the nested hosts) moves a thousand round
 * trips' mean by a few percent, and not their median. */
#define SAMPLES 4096
static u32 samples[SAMPLES];

/* median sorts the first n samples (Shell's sort: no recursion, no
 * quadratic time at 4096) and returns the middle one, the lower of the
 * two for an even n. */
static u32 median(u32 n)
{
	static const u32 gaps[] = {1750, 701, 301, 132, 57, 23, 10, 4, 1};
	for (u32 g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
		u32 gap = gaps[g];
		for (u32 i = gap; i < n; i++) {
			u32 v = samples[i], j = i;
			for (; j >= gap && samples[j - gap] > v; j -= gap)
				samples[j] = samples[j - gap];
			samples[j] = v;
		}
	}
	return samples[(n - 1) / 2];
}

/* With pveoi the handler's EOI is Linux's PV EOI (no exit when govmm set
 * the bit); without, rttloop.S's own, as under the floor VMM. */
static volatile u32 pv_eois;             /* EOIs PV EOI completed without an exit */
static void eoi_pveoi(void)
{
	if (eoi_pv(this_cpu()))
		pv_eois++;
}

/* The send as the mode has it, and the handler in the IDT directly (the
 * same instructions as under the floor VMM, not rt's C dispatch). */
static void setup_rtt(void)
{
	if (mode == PV) {
		rtt_send_kind = 2;      /* the bitmap names APIC ID 1 */
	} else {
		rtt_send_kind = x2apic ? 0 : 1;
		rtt_send_dest = logical ? logical_id(1) : 1;
		rtt_send_lo = (logical ? ICR_LOGICAL : 0) | V_RTT;
	}
	rtt_eoi = pveoi ? eoi_pveoi : x2apic ? rtt_eoi_x2apic : rtt_eoi_xapic;
	rtt_samples = samples;
	rtt_samples_cap = SAMPLES;
	u32 a = (u32)rtt_isr;
	idt[V_RTT] = (a & 0xffff) | 0x08u << 16 | (u64)((a & 0xffff0000) | 0x8E00) << 32;
}

static void ap_main(int idx)
{
	cpu_apicid[idx] = setup_cpu(idx);
	atomic_inc(&ready);
	if (cpu_apicid[idx] != 1)
		for (;;)
			asm volatile("sti; hlt");
	rtt_receive();
}

/* settle, for a halted receiver, waits until it is in its HLT (it has
 * counted a HLT since its handler last ran) and its HLT's exit is behind
 * the section marker that follows: the receiver's count of its HLTs and
 * the VMM's of its HLT exits then cover the same HLTs. Under govmm, until
 * govmm says it has served that HLT (port 0x678), however long the host
 * held the receiver's thread; under another VMM, SETTLE cycles more (a
 * hold longer than that would split them). Outside the timed round
 * trips. Not "one HLT more than IPIs": a host that holds the receiver's
 * thread for a whole gap between its handler's EOI and its next HLT (a
 * Go runtime's stop-the-world, an L1 scheduler's turn) has the next IPI
 * find it running, taken with no HLT of its own (TestBenchRTT counts such
 * a round trip's kick exit against the guest's own counts). */
#define SETTLE 100000000u
static void settle(void)
{
	if (!WAIT(rtt_hlts != rtt_ack_hlts, 10))
		die("settle", "the receiver did not halt: %u HLTs, %u IPIs, %u HLTs at the last", rtt_hlts, rtt_acks, rtt_ack_hlts);
	if (!govmm_vmm()) {
		delay(SETTLE);
		return;
	}
	if (!WAIT(govmm_halted(1), 60))
		die("settle", "the receiver is in its HLT but not halted in govmm");
}

/* One section of rounds round trips, and its line. */
static void measure(u32 sec, const char *receiver, u32 rounds, u32 gap)
{
	u32 mm[2];
	u32 base = rtt_acks;
	if (!rtt_spin)
		settle();
	section(sec);
	u32 hlts = rtt_hlts, acks = rtt_acks, pv = pv_eois;
	u64 total = rtt_measure(rounds, gap, mm);
	if (!rtt_spin)
		settle();
	hlts = rtt_hlts - hlts, acks = rtt_acks - acks, pv = pv_eois - pv;
	section(0);
	/* No 64-bit division here (no libgcc): the total goes out in hex.
	 * The receiver's own counts, independent of the VMM's: its HLTs and
	 * its EOIs (each an exit, but those PV EOI completed) between the
	 * section's markers; a HLT it entered before the last IPI's handler
	 * returned counts in the next section. */
	printf("# rtt receiver=%s mode=%s rounds=%u gap=%u cycles_total=0x%x%08x cycles_min=%u cycles_max=%u "
	       "recv_hlts=%u recv_eois=%u recv_pv_eois=%u cycles_median=%u\n",
	       receiver, mode_names[mode], rounds, gap, (u32)(total >> 32), (u32)total, mm[0], mm[1], hlts, acks - pv, pv,
	       median(rounds < SAMPLES ? rounds : SAMPLES));
	delay(gap);
	check(rtt_acks == base + rounds, "every round trip acknowledged once", "%u acks for %u IPIs", rtt_acks - base, rounds);
}

void test_main(void)
{
	mode_parse();
	u32 rounds = param_u32("rounds", 200);
	u32 gap = param_u32("gap", 100000);
	mode_require();
	if (ncpus < 2)
		die("cpus", "rtt needs 2 vCPUs or more, has %u", ncpus);
	if (rounds == 0)
		die("rounds", "rounds=0: want 1 or more");
	setup_bsp();
	setup_rtt();
	smp_boot(ap_main);
	if (!WAIT(ready == (u32)ncpus - 1, 60))
		die("ap bring-up", "%u of %u APs ready", ready, ncpus - 1);
	check_cpus();
	if (!member(1))
		die("member", "APIC ID 1 has no logical ID in mode %s", mode_names[mode]);
	printf("ok %u cpus up, mode %s, receiver APIC ID 1\n", ncpus, mode_names[mode]);
	delay(gap);
	measure(1, "halted", rounds, gap);
	rtt_spin = 1;                   /* one round trip, untimed, outside the */
	u32 mm[2];                      /* sections: wakes the receiver into its spin */
	rtt_measure(1, gap, mm);
	measure(2, "spinning", rounds, gap);
	rtt_spin = 0;
}
