/* timer: the local APIC timer on the BSP, vector 0x50.
 *
 * cmdline: mode=oneshot|periodic|tscdeadline (default oneshot)
 *          x2apic=1 (use x2APIC MSRs if CPUID has x2APIC, else xAPIC MMIO)
 *          count=N  (initial count, divide-by-16; default 0x400000 one-shot,
 *                    0x100000 periodic: ~67 / ~17 ms at a 1 GHz APIC bus)
 *          ticks=N  (TSC-deadline distance, default 3000000: ~1 ms)
 * The waits for the interrupt use sti;hlt, so they also test that the VMM
 * wakes a halted vCPU for its timer; a timer that never fires hangs in hlt
 * (the harness's timeout is the guard there). */
#include "rt.h"

const char guest_name[] = "timer";

#define V_TIMER 0x50
#define LVT_PERIODIC 0x20000
#define LVT_TSCDL    0x40000
#define LVT_MASKED   0x10000
#define MSR_TSCDL    0x6E0

static volatile u32 fired;
static volatile u64 fired_tsc[4];

static void on_timer(struct frame *f)
{
	if (fired < 4)
		fired_tsc[fired] = rdtsc();
	fired++;
	apic_eoi();
}

/* Sleep until cond; IF=0 between the test and hlt so no wake-up is lost. */
#define WAIT_HLT(cond, secs) ({                                          \
	u64 _end = rdtsc() + (u64)(secs) * TSC_SEC;                      \
	cli();                                                           \
	while (!(cond) && rdtsc() < _end)                                \
		asm volatile("sti; hlt; cli" ::: "memory");              \
	sti();                                                           \
	(cond) ? 1 : 0; })

static void oneshot(void)
{
	u32 init = param_u32("count", 0x400000);
	apic_write(APIC_LVTT, V_TIMER);
	u64 t0 = rdtsc();
	apic_write(APIC_TMICT, init);
	u32 c1 = apic_read(APIC_TMCCT), c2 = apic_read(APIC_TMCCT);
	check(c1 <= init && c2 < c1, "one-shot current count decreasing",
	      "initial %x, reads %x then %x", init, c1, c2);
	if (!WAIT_HLT(fired >= 1, 20))
		die("one-shot", "no interrupt");
	u32 c3 = apic_read(APIC_TMCCT);
	check(c3 == 0, "one-shot current count 0 after expiry", "reads %x", c3);
	delay(2 * (fired_tsc[0] - t0));     /* twice the time it took to fire */
	check(fired == 1, "one-shot fired exactly once", "fired %u times", fired);
}

static void periodic(void)
{
	u32 init = param_u32("count", 0x100000);
	apic_write(APIC_LVTT, LVT_PERIODIC | V_TIMER);
	apic_write(APIC_TMICT, init);
	if (!WAIT_HLT(fired >= 3, 20))
		die("periodic", "%u interrupts, want 3", fired);
	cli();
	apic_write(APIC_TMICT, 0);      /* stops the timer */
	u32 f = fired;
	sti();
	printf("ok periodic: %u interrupts\n", f);
	u32 c = apic_read(APIC_TMCCT);
	check(c == 0, "periodic stopped by initial count 0: current count 0", "reads %x", c);
	delay(2 * (fired_tsc[2] - fired_tsc[1]));   /* two periods */
	check(fired == f, "periodic: no interrupt after stopping", "%u more", fired - f);
}

static void tscdeadline(void)
{
	u32 r[4];
	cpuid(1, r);
	if (!(r[2] >> 24 & 1))
		die("tsc-deadline", "CPUID.1:ECX bit 24 (TSC-deadline timer) is clear");
	apic_write(APIC_LVTT, LVT_TSCDL | V_TIMER);
	u64 dl = rdtsc() + param_u32("ticks", 3000000);
	wrmsr(MSR_TSCDL, dl);
	if (!WAIT_HLT(fired >= 1, 20))
		die("tsc-deadline", "no interrupt");
	check(fired_tsc[0] >= dl, "tsc-deadline fired at or after the deadline",
	      "fired %u ticks early", (u32)(dl - fired_tsc[0]));
	u64 m = rdmsr(MSR_TSCDL);
	check(m == 0, "tsc-deadline MSR 0x6E0 reads 0 after firing", "reads %x%08x",
	      (u32)(m >> 32), (u32)m);

	u64 past = rdtsc() >> 1;        /* long past, and not 0 (0 disarms) */
	wrmsr(MSR_TSCDL, past ? past : 1);
	check(WAIT(fired >= 2, 1), "tsc-deadline in the past fires at once", "no interrupt");
	m = rdmsr(MSR_TSCDL);
	check(m == 0, "tsc-deadline MSR 0x6E0 reads 0 after the past deadline", "reads %x%08x",
	      (u32)(m >> 32), (u32)m);
	delay(TSC_SEC / 50);
	check(fired == 2, "tsc-deadline: one interrupt per deadline", "fired %u times", fired);
}

void test_main(void)
{
	const char *m = param("mode");
	if (!m)
		m = "oneshot";
	if (param_u32("x2apic", 0) && !x2apic_enable())
		printf("# x2apic=1 but CPUID.1:ECX bit 21 is clear: using xAPIC\n");
	printf("# mode=%s apic=%s\n", m, x2apic ? "x2apic" : "xapic");
	isr_table[V_TIMER] = on_timer;
	apic_write(APIC_SVR, 0x1FF);
	apic_write(APIC_TPR, 0);
	apic_write(APIC_TDCR, 0x3);     /* divide by 16 */
	sti();
	if (streq(m, "oneshot"))
		oneshot();
	else if (streq(m, "periodic"))
		periodic();
	else if (streq(m, "tscdeadline"))
		tscdeadline();
	else
		die("mode", "mode=%s: want oneshot|periodic|tscdeadline", m);
	apic_write(APIC_LVTT, LVT_MASKED);
}
