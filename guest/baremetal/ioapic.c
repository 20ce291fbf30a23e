/* ioapic: the I/O APIC at 0xFEC00000 driven through pc-testdev lines.
 *
 * cmdline: x2apic=1 (BSP, and APs if started, use x2APIC; default xAPIC)
 *          aps=0    (leave the APs in wait-for-SIPI; default: start them
 *                    when there are any, for the destination tests)
 * Made for 1..64 vCPUs (more work; AP tests use APIC IDs < 32). Pins used: 10 (edge), 11 and 13 (level), 12 (active low),
 * 20 (register read/write only). All pins stay masked between tests.
 *
 * Checks: ID (bits 27:24 writable only), version 0x00170020 read-only,
 * arbitration ID; reset RTEs masked; RTE read/write with Remote IRR and
 * Delivery Status read-only; edge (one interrupt per rising edge, masked
 * edge lost, unmask does not replay it); level (fires once, Remote IRR while
 * in service, no re-fire before EOI, LAPIC EOI re-delivers a still-high
 * line, none after lowering it, masked level fires on unmask, TMR set);
 * active-low polarity (level and edge); EOI by vector (two pins, two
 * vectors); the IOAPIC EOI register; physical, logical and lowest-priority
 * destinations on APs.
 *
 * Accounting sections (port 0x660), BSP only, APs halted:
 *   1 edge:  unmask pin 10 (IOREGSEL write, IOWIN write), line 10 = 1
 *            (interrupt 0x60, handler writes LAPIC EOI), line 10 = 0,
 *            mask pin 10 (IOREGSEL write, IOWIN write)
 *            => 4 IOAPIC MMIO writes, 2 pc-testdev OUTs, 1 LAPIC EOI
 *   2 level: unmask pin 11 (2 writes), line 11 = 1 (interrupt 0x61, no EOI
 *            in the handler), read RTE low (IOREGSEL write, IOWIN read),
 *            line 11 = 0, LAPIC EOI (level: EOI broadcast to the IOAPIC),
 *            read RTE low (write + read), mask pin 11 (2 writes)
 *            => 8 IOAPIC MMIO accesses (6 writes, 2 reads), 2 pc-testdev
 *               OUTs, 1 LAPIC EOI
 * A LAPIC access is an MMIO exit in xAPIC mode, a WRMSR 0x80B with x2apic=1. */
#include "rt.h"

const char guest_name[] = "ioapic";

enum {
	V_EDGE = 0x60, V_LVL = 0x61, V_LOWL = 0x63, V_LOWE = 0x64,
	V_AP = 0x68, V_LVL2 = 0x71,
};
#define P_EDGE 10
#define P_LVL  11
#define P_LOW  12
#define P_LVL2 13
#define P_RW   20

static volatile u32 cnt[256];           /* deliveries per vector */
static volatile u32 last_cpu[256];      /* APIC ID of the last receiver */
static volatile u32 percpu[MAX_CPUS];   /* deliveries per APIC ID */
static volatile u8 defer_eoi[256];      /* BSP leaves the EOI to the test */
static volatile u32 ready;
static u32 n;

static void on_irq(struct frame *f)
{
	u32 v = f->vec, me = cpu_apicid[this_cpu()];
	if (!defer_eoi[v] || me != cpu_apicid[0])
		apic_eoi();
	last_cpu[v] = me;
	if (me < MAX_CPUS)
		percpu[me]++;
	atomic_inc(&cnt[v]);
}

static u32 rte_lo(int pin) { return ioapic_read(0x10 + 2 * pin); }
static void set_lo(int pin, u32 v) { ioapic_write(0x10 + 2 * pin, v); }
static int rirr(int pin) { return !!(rte_lo(pin) & RTE_RIRR); }
static u32 isbit(u32 base, u32 v) { return apic_read(base + (v >> 5) * 0x10) >> (v & 31) & 1; }
static void quiet(void) { delay(TSC_SEC / 50); }       /* "nothing more arrives" */

static int wait_cnt(u32 v, u32 want, const char *what)
{
	if (WAIT(cnt[v] >= want, 5))
		return 1;
	fail(what, "timeout: vector %x delivered %u times, want %u", v, cnt[v], want);
	return 0;
}

static void ap_main(int idx)
{
	if (x2apic)
		x2apic_enable();
	u32 id = apic_id();
	apic_write(APIC_SVR, 0x1FF);
	if (!x2apic) {
		apic_write(APIC_DFR, 0xFFFFFFFF);                    /* flat */
		apic_write(APIC_LDR, id < 8 ? 1u << (24 + id) : 0);
	}
	cpu_apicid[idx] = id;
	atomic_inc(&ready);
	for (;;)
		asm volatile("sti; hlt");
}

static void regs_test(void)
{
	u32 id = ioapic_read(0x00);
	check(id == 0, "ID register 0 after reset", "reads %x", id);
	ioapic_write(0x00, 0xFFFFFFFF);
	u32 r = ioapic_read(0x00);
	check(r == 0x0F000000, "ID: only bits 27:24 writable", "wrote ffffffff, reads %x", r);
	ioapic_write(0x00, 0x05000000);
	r = ioapic_read(0x00);
	u32 arb = ioapic_read(0x02);
	check(r == 0x05000000 && (arb & 0x0F000000) == 0x05000000,
	      "ID 5 written, arbitration ID follows it", "ID %x arbitration %x", r, arb);
	ioapic_write(0x02, 0x0A000000);
	u32 arb2 = ioapic_read(0x02);
	check(arb2 == arb, "arbitration register read-only", "wrote 0a000000: %x -> %x", arb, arb2);
	ioapic_write(0x00, 0);
	check(ioapic_read(0x00) == 0, "ID back to 0", "reads %x", ioapic_read(0x00));

	u32 ver = ioapic_read(0x01);
	check(ver == 0x00170020, "version 0x00170020 (24 pins, EOI register)", "reads %x", ver);
	ioapic_write(0x01, 0);
	r = ioapic_read(0x01);
	check(r == ver, "version read-only", "wrote 0, reads %x", r);

	u32 unmasked = 0, odd = 0;
	for (int pin = 0; pin < 24; pin++) {
		u64 e = ioapic_get_rte(pin);
		if (!(e & RTE_MASKED) && !unmasked++)
			printf("# pin %d RTE %x:%08x after reset\n", pin, (u32)(e >> 32), (u32)e);
		if (e != RTE_MASKED)
			odd++;
	}
	check(!unmasked, "all 24 RTEs masked after reset", "%u unmasked", unmasked);
	if (odd)
		printf("# %u RTEs are not exactly 0x10000 after reset\n", odd);

	/* All ones: masked, so no interrupt even though active-low level on a
	 * low line is asserted. */
	ioapic_set_rte(P_RW, 0xFFFFFFFFFFFFFFFFull);
	u64 e = ioapic_get_rte(P_RW);
	u32 lo = (u32)e, hi = (u32)(e >> 32);
	check((lo & 0x1FFFF) == 0x1AFFF, "RTE low: bits 0-11,13,15,16 writable, Remote IRR and delivery status read-only",
	      "wrote ffffffff, reads %x", lo);
	check((hi & 0xFFFF0000) == 0xFFFF0000, "RTE high: destination and remappable index bits 63:48 writable",
	      "wrote ffffffff, reads %x", hi);
	if (lo != 0xFFFFAFFF || hi != 0xFFFFFFFF)
		printf("# all-ones RTE reads %x:%08x (reserved bits)\n", hi, lo);
	ioapic_set_rte(P_RW, 0x5A00000000010A5Aull);
	e = ioapic_get_rte(P_RW);
	check(e == 0x5A00000000010A5Aull, "RTE pattern 5a000000:00010a5a reads back",
	      "reads %x:%08x", (u32)(e >> 32), (u32)e);
	ioapic_set_rte(P_RW, RTE_MASKED);
	e = ioapic_get_rte(P_RW);
	check(e == RTE_MASKED, "RTE restored to masked 0", "reads %x:%08x", (u32)(e >> 32), (u32)e);
}

static void edge_test(void)
{
	u32 c0 = cnt[V_EDGE];
	ioapic_set_rte(P_EDGE, V_EDGE);                 /* edge, high, phys dest BSP */
	quiet();
	check(cnt[V_EDGE] == c0, "edge: no interrupt at unmask with line low", "got %u", cnt[V_EDGE] - c0);
	int good = 1;
	for (int i = 1; i <= 3; i++) {
		line(P_EDGE, 1);
		good &= wait_cnt(V_EDGE, c0 + i, "edge: rising edge");
		quiet();
		line(P_EDGE, 0);
		quiet();
		if (cnt[V_EDGE] != c0 + (u32)i) {
			fail("edge", "after %d edges %u interrupts", i, cnt[V_EDGE] - c0);
			good = 0;
			break;
		}
	}
	if (good)
		ok("edge: exactly one interrupt per rising edge (3 edges), none while high or on fall");
	check(last_cpu[V_EDGE] == cpu_apicid[0], "edge: delivered to the BSP", "APIC ID %u", last_cpu[V_EDGE]);
	check(!isbit(APIC_TMR, V_EDGE), "edge: TMR bit clear for an edge vector", "TMR set");
	check(!rirr(P_EDGE), "edge: Remote IRR stays clear", "set");

	u32 c1 = cnt[V_EDGE];
	set_lo(P_EDGE, V_EDGE | RTE_MASKED);
	line(P_EDGE, 1);
	line(P_EDGE, 0);
	quiet();
	check(cnt[V_EDGE] == c1, "edge: masked edge not delivered", "got %u", cnt[V_EDGE] - c1);
	set_lo(P_EDGE, V_EDGE);
	quiet();
	check(cnt[V_EDGE] == c1, "edge: unmask does not replay a masked edge", "got %u", cnt[V_EDGE] - c1);
	set_lo(P_EDGE, V_EDGE | RTE_MASKED);
	line(P_EDGE, 1);                                /* edge while masked, line stays high */
	set_lo(P_EDGE, V_EDGE);
	quiet();
	check(cnt[V_EDGE] == c1, "edge: unmask with the line still high does not fire", "got %u",
	      cnt[V_EDGE] - c1);
	line(P_EDGE, 0);
	line(P_EDGE, 1);
	wait_cnt(V_EDGE, c1 + 1, "edge after unmask");
	line(P_EDGE, 0);
	quiet();
	check(cnt[V_EDGE] == c1 + 1, "edge: next edge after unmask fires once", "got %u", cnt[V_EDGE] - c1);
	set_lo(P_EDGE, V_EDGE | RTE_MASKED);
}

static void level_test(void)
{
	defer_eoi[V_LVL] = 1;
	u32 c0 = cnt[V_LVL];
	ioapic_set_rte(P_LVL, V_LVL | RTE_LEVEL);
	line(P_LVL, 1);
	if (!wait_cnt(V_LVL, c0 + 1, "level: assert"))
		goto out;
	check(rirr(P_LVL), "level: fires, Remote IRR set while in service", "Remote IRR clear");
	check(isbit(APIC_TMR, V_LVL), "level: LAPIC TMR bit set", "TMR clear");
	quiet();
	check(cnt[V_LVL] == c0 + 1, "level: no re-fire while line high before EOI", "fired %u times",
	      cnt[V_LVL] - c0);
	apic_eoi();                                     /* line still high */
	if (wait_cnt(V_LVL, c0 + 2, "level: re-delivery after EOI"))
		ok("level: LAPIC EOI clears Remote IRR, the still-high line fires again");
	check(rirr(P_LVL), "level: Remote IRR set again", "clear");
	line(P_LVL, 0);
	apic_eoi();
	quiet();
	check(cnt[V_LVL] == c0 + 2 && !rirr(P_LVL), "level: line low + EOI: Remote IRR clear, no more",
	      "fired %u times, Remote IRR %d", cnt[V_LVL] - c0, rirr(P_LVL));

	set_lo(P_LVL, V_LVL | RTE_LEVEL | RTE_MASKED);
	line(P_LVL, 1);
	quiet();
	check(cnt[V_LVL] == c0 + 2 && !rirr(P_LVL), "level: masked asserted line does not fire",
	      "fired %u, Remote IRR %d", cnt[V_LVL] - c0 - 2, rirr(P_LVL));
	set_lo(P_LVL, V_LVL | RTE_LEVEL);
	if (wait_cnt(V_LVL, c0 + 3, "level: unmask"))
		ok("level: masked asserted line fires on unmask");
	line(P_LVL, 0);
	apic_eoi();
	quiet();
	check(cnt[V_LVL] == c0 + 3 && !rirr(P_LVL), "level: quiet after EOI", "fired %u, Remote IRR %d",
	      cnt[V_LVL] - c0 - 3, rirr(P_LVL));
out:
	set_lo(P_LVL, V_LVL | RTE_LEVEL | RTE_MASKED);
	line(P_LVL, 0);
	defer_eoi[V_LVL] = 0;
}

static void polarity_test(void)
{
	defer_eoi[V_LOWL] = 1;
	u32 c0 = cnt[V_LOWL];
	line(P_LOW, 1);                                 /* inactive for active low */
	ioapic_set_rte(P_LOW, V_LOWL | RTE_LEVEL | RTE_LOWACT);
	quiet();
	check(cnt[V_LOWL] == c0, "active-low level: line high is inactive", "fired");
	line(P_LOW, 0);
	if (wait_cnt(V_LOWL, c0 + 1, "active-low level: line low"))
		check(rirr(P_LOW), "active-low level: line low fires, Remote IRR set", "Remote IRR clear");
	line(P_LOW, 1);
	apic_eoi();
	quiet();
	check(cnt[V_LOWL] == c0 + 1 && !rirr(P_LOW), "active-low level: line high + EOI: quiet",
	      "fired %u, Remote IRR %d", cnt[V_LOWL] - c0, rirr(P_LOW));
	defer_eoi[V_LOWL] = 0;

	u32 c1 = cnt[V_LOWE];
	set_lo(P_LOW, V_LOWE | RTE_LOWACT);             /* edge, active low; line high */
	line(P_LOW, 0);
	wait_cnt(V_LOWE, c1 + 1, "active-low edge");
	line(P_LOW, 1);
	quiet();
	check(cnt[V_LOWE] == c1 + 1, "active-low edge: falling edge fires once, rising none",
	      "fired %u", cnt[V_LOWE] - c1);
	set_lo(P_LOW, V_LOWE | RTE_LOWACT | RTE_MASKED);
	line(P_LOW, 0);
}

static void eoi_vector_test(void)
{
	defer_eoi[V_LVL] = defer_eoi[V_LVL2] = 1;
	u32 a = cnt[V_LVL], b = cnt[V_LVL2];
	ioapic_set_rte(P_LVL, V_LVL | RTE_LEVEL);
	ioapic_set_rte(P_LVL2, V_LVL2 | RTE_LEVEL);
	line(P_LVL, 1);
	int okc = wait_cnt(V_LVL, a + 1, "eoi by vector: pin 11");
	line(P_LVL2, 1);                                /* class 7 preempts class 6 */
	okc &= wait_cnt(V_LVL2, b + 1, "eoi by vector: pin 13");
	line(P_LVL, 0);
	line(P_LVL2, 0);
	if (!okc)
		goto out;
	check(rirr(P_LVL) && rirr(P_LVL2), "two level pins in service, both Remote IRR set",
	      "pin 11 %d pin 13 %d", rirr(P_LVL), rirr(P_LVL2));
	apic_eoi();                                     /* ends 0x71 only */
	check(!rirr(P_LVL2) && rirr(P_LVL), "EOI by vector: LAPIC EOI of 0x71 clears pin 13 only",
	      "pin 11 Remote IRR %d, pin 13 %d", rirr(P_LVL), rirr(P_LVL2));
	*(volatile u32 *)(IOAPIC_BASE + IOAPIC_EOI) = 0x65;
	check(rirr(P_LVL), "IOAPIC EOI register: other vector (0x65) leaves Remote IRR", "cleared");
	*(volatile u32 *)(IOAPIC_BASE + IOAPIC_EOI) = V_LVL;
	check(!rirr(P_LVL), "IOAPIC EOI register (0x40) clears Remote IRR by vector", "still set");
	apic_eoi();                                     /* ISR 0x61 */
	quiet();
	check(cnt[V_LVL] == a + 1 && cnt[V_LVL2] == b + 1, "no extra deliveries after EOIs",
	      "0x61 %u, 0x71 %u", cnt[V_LVL] - a, cnt[V_LVL2] - b);
out:
	set_lo(P_LVL, V_LVL | RTE_LEVEL | RTE_MASKED);
	set_lo(P_LVL2, V_LVL2 | RTE_LEVEL | RTE_MASKED);
	defer_eoi[V_LVL] = defer_eoi[V_LVL2] = 0;
}

/* One edge on pin 10 with this RTE; returns the APIC IDs that got it as a
 * bit mask (CPUs 0..31), -1 on timeout. */
static u32 ap_edge(u64 rte, u32 want_total)
{
	u32 before[32];
	for (u32 i = 0; i < 32 && i < n; i++)
		before[i] = percpu[i];
	u32 c0 = cnt[V_AP];
	ioapic_set_rte(P_EDGE, rte);
	line(P_EDGE, 1);
	line(P_EDGE, 0);
	WAIT(cnt[V_AP] >= c0 + want_total, 5);
	quiet();
	ioapic_set_rte(P_EDGE, V_AP | RTE_MASKED);
	if (cnt[V_AP] != c0 + want_total)
		return ~0u;
	u32 m = 0;
	for (u32 i = 0; i < 32 && i < n; i++)
		if (percpu[i] != before[i])
			m |= 1u << i;
	return m;
}

static void dest_test(void)
{
	if (n < 2 || param_u32("aps", 1) == 0) {
		printf("# destination tests on APs skipped (cpus=%u)\n", n);
		return;
	}
	smp_boot(ap_main);
	if (!WAIT(ready == n - 1, 60)) {
		fail("ap bring-up", "%u of %u APs ready", ready, n - 1);
		return;
	}
	u32 t = n - 1 < 31 ? n - 1 : 31;
	u32 m = ap_edge((u64)t << 56 | V_AP, 1);
	check(m == 1u << t, "physical destination: AP (APIC ID n-1) gets the pin", "receivers %x, want %x",
	      m, 1u << t);
	u32 l = n - 1 < 7 ? n - 1 : 7;          /* flat / x2APIC cluster 0 bit */
	m = ap_edge((u64)(1u << l) << 56 | RTE_LOGICAL | V_AP, 1);
	check(m == 1u << l, "logical destination: one AP", "receivers %x, want %x", m, 1u << l);
	if (n >= 3) {
		m = ap_edge((u64)0x06 << 56 | RTE_LOGICAL | V_AP, 2);
		check(m == 0x06, "logical destination 0x06: APIC IDs 1 and 2 both", "receivers %x", m);
		u32 set = (n >= 8 ? 0xFE : ((1u << n) - 1) & ~1u), bad = 0;
		for (int i = 0; i < 4; i++) {
			m = ap_edge((u64)set << 56 | RTE_LOGICAL | 0x100 | V_AP, 1);
			if (m == ~0u || (m & (m - 1)) || (m & ~set))
				bad++;
		}
		check(!bad, "lowest priority (logical set): exactly one receiver in the set per edge",
		      "%u of 4 edges wrong", bad);
	}
}

static void sections(void)
{
	u32 a0 = apic_acc[0], c0 = cnt[V_EDGE];
	ioapic_set_rte(P_EDGE, V_EDGE | RTE_MASKED);
	section(1);
	set_lo(P_EDGE, V_EDGE);
	line(P_EDGE, 1);
	WAIT(cnt[V_EDGE] == c0 + 1, 5);
	line(P_EDGE, 0);
	set_lo(P_EDGE, V_EDGE | RTE_MASKED);
	section(0);
	printf("# section 1 edge: ioapic_mmio=4 (writes) testdev_out=2 lapic_eoi=%u interrupts=%u\n",
	       apic_acc[0] - a0, cnt[V_EDGE] - c0);
	check(cnt[V_EDGE] == c0 + 1 && apic_acc[0] - a0 == 1, "section 1 edge: one interrupt, one EOI",
	      "%u interrupts, %u APIC accesses", cnt[V_EDGE] - c0, apic_acc[0] - a0);

	defer_eoi[V_LVL] = 1;
	a0 = apic_acc[0], c0 = cnt[V_LVL];
	ioapic_set_rte(P_LVL, V_LVL | RTE_LEVEL | RTE_MASKED);
	section(2);
	set_lo(P_LVL, V_LVL | RTE_LEVEL);
	line(P_LVL, 1);
	WAIT(cnt[V_LVL] == c0 + 1, 5);
	u32 r1 = rte_lo(P_LVL);
	line(P_LVL, 0);
	apic_eoi();
	u32 r2 = rte_lo(P_LVL);
	set_lo(P_LVL, V_LVL | RTE_LEVEL | RTE_MASKED);
	section(0);
	defer_eoi[V_LVL] = 0;
	printf("# section 2 level: ioapic_mmio=8 (6 writes, 2 reads) testdev_out=2 lapic_eoi=%u interrupts=%u\n",
	       apic_acc[0] - a0, cnt[V_LVL] - c0);
	check(cnt[V_LVL] == c0 + 1 && apic_acc[0] - a0 == 1 && (r1 & RTE_RIRR) && !(r2 & RTE_RIRR),
	      "section 2 level: one interrupt, Remote IRR set then cleared by the EOI",
	      "%u interrupts, %u APIC accesses, RTE %x then %x", cnt[V_LVL] - c0, apic_acc[0] - a0, r1, r2);
}

void test_main(void)
{
	n = ncpus;
	if (param_u32("x2apic", 0) && !x2apic_enable())
		die("x2apic", "x2apic=1 but CPUID.1:ECX bit 21 is clear");
	printf("# %s, %u cpus\n", x2apic ? "x2APIC" : "xAPIC", n);
	for (int v = 0x40; v < 0xF0; v++)
		isr_table[v] = on_irq;
	bsp_apic_setup();
	u32 v = ioapic_read(0x01);
	if (v == 0xFFFFFFFF)
		die("ioapic", "version register reads ffffffff: no IOAPIC at fec00000");
	sti();
	regs_test();
	edge_test();
	level_test();
	polarity_test();
	eoi_vector_test();
	sections();
	dest_test();
	delay(TSC_SEC / 50);
	u32 stray = 0;
	for (int v = 0x40; v < 0xF0; v++)
		if (v != V_EDGE && v != V_LVL && v != V_LOWL && v != V_LOWE && v != V_AP && v != V_LVL2)
			stray += cnt[v];
	check(!stray, "no interrupts on other vectors", "%u stray", stray);
}
