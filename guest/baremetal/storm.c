/* storm: every CPU sends IPIs to every other one at once, and every IPI must
 * arrive exactly once.
 *
 * cmdline: mode=xapic-phys|xapic-flat|xapic-cluster|x2apic-phys|x2apic-cluster|pv
 *          (as ipi.c)  count=N deliveries in all (default 1000000)  pveoi=1
 *
 * With all CPUs up, each CPU (the BSP too) addresses its share of N
 * deliveries to the others: mostly unicasts to a target drawn afresh each
 * time, and every fourth send a multicast to every target of one window that
 * may take it (logical modes: one ICR to one cluster, or the 8 flat bits;
 * pv: one trap for a window of up to 64 CPUs; physical modes: one ICR per
 * target of such a window, as Linux does). Between sends, even APIC IDs
 * halt when an IPI is on its way to them and odd ones spin with IF=1, so
 * the VMM both wakes halted receivers
 * and kicks running ones. The whole storm is accounting section 1 (port
 * 0x660); nothing else sends an IPI in it. It closes once every CPU has
 * received everything addressed to it and made one APIC read (TPR): an
 * exit, after which govmm has taken in any PV EOI (it does at each entry).
 *
 * Why counting works, with coalescing ruled out. A second IPI with a vector
 * already set in the target's IRR is merged with the first (SDM 11.5.5):
 * legitimate, and invisible to a count. So each sender S owns K vectors
 * ("slots": vector 0x40 + S*K + k, K = min(8, 128/n)), and each slot has at
 * most one IPI in flight to each target T. For slot V = S*K + k:
 *   sent[V][T]   deliveries S addressed to T on slot V; written by S only,
 *                before the ICR write (or PV trap) that sends them;
 *   recv[T][V]   deliveries of vector 0x40+V that T's handler took; written
 *                by T's handler only.
 * S may use slot V for T again only once recv[T][V] == sent[V][T] (the
 * handler ran, so the vector left IRR): a vector is never pending twice at
 * T. K slots let S have K IPIs in flight to each target, so senders rarely
 * wait for credit and a receiver often has several vectors pending at once.
 * The handler checks the sequence: on entry sent[V][T] must be exactly
 * recv[T][V] + 1. A duplicate (or an IPI nobody sent) handled on its own
 * breaks that at once, and leaves recv > sent; a loss leaves sent > recv
 * for good, which stalls the slot and trips the BSP's no-progress watchdog
 * once senders run dry; at the end every (slot, target) pair must have
 * recv == sent. A duplicate that lands in IRR while the next legitimate IPI
 * on its slot is pending merges with it and is invisible to any guest; so
 * the guest prints its totals ("# storm ... received=R icr_writes=W") and
 * govmm's IPIDelivered over section 1 must equal R (tests/storm_test.go),
 * its IPISent W.
 *
 * Ordering: S's store to sent[V][T] is followed by a locked increment of
 * inflight[T] before the ICR write; the locked op is the full fence an
 * x2APIC ICR WRMSR (not serializing) needs so the handler sees the store
 * (Linux: weak_wrmsr_fence). inflight[T] (sends to T not yet handled) also
 * lets T halt safely: it halts only with IF=0 checked inflight[T] > 0, so an
 * IPI is in IRR or about to be sent, and sti;hlt cannot miss it.
 *
 * Stacks: up to n-1 vectors can be pending at once, and each handler
 * returns with popfl; ret (entry.S), so the next one nests at that point,
 * but only the 4-byte return address of the finished handler stays on the
 * stack: 4 KiB per CPU is plenty.
 *
 * Up to 1024 CPUs (rt's MAX_CPUS), of which at most 128 send: the slots are
 * vectors 0x40..0xBF, one at least per sender. With more than 128 CPUs the
 * APIC IDs from 128 up only receive (and every sender still reaches all of
 * them), so the storm at scale is many senders into many more receivers.
 * xapic-flat and xapic-cluster receivers are the CPUs with a logical ID
 * (APIC IDs < 8 / < 60), the others only send. */
#include "apicmode.h"

const char guest_name[] = "storm";

#define MAXS    MAX_CPUS                /* CPUs */
#define MAXV    128                     /* slots: vectors VBASE..VBASE+127; also the most senders */
#define PVW     (MAXS / 32)             /* PV bitmap: u32 words for MAXS APIC IDs */
#define MAXK    8                       /* slots per sender, at most */
#define VBASE   0x40
#define V_WAKE  0x30                    /* bring-up only, before the section */
#define MCAST   64                      /* physical and pv multicasts: targets per window, at most */
#define SPIN    64                      /* spinner: pause loops between sends, at most */
#define STALL   20                      /* watchdog: "seconds" without progress (see WAIT) */

#define atomic_dec(p) __atomic_sub_fetch((p), 1, __ATOMIC_SEQ_CST)

static u32 n, senders, members, count, K, pvwords; /* pvwords: 64-bit words */

static volatile u32 sent[MAXV][MAXS];   /* [V][T]: written by V's sender */
static volatile u32 recv[MAXS][MAXV];   /* [T][V]: written by T's handler */
static volatile u32 inflight[MAXS];     /* [T]: sends to T not yet handled (atomic) */
static volatile u32 rcvd[MAXS];         /* [T]: handler runs (T only) */
static volatile u32 addressed[MAXS];    /* [S]: deliveries addressed (S only) */
static volatile u32 icrs[MAXS];         /* [S]: ICR writes / PV traps that sent */
static volatile u32 mcasts[MAXS];       /* [S]: multicast operations */
static volatile u32 halts[MAXS];        /* [T]: hlt executed with an IPI on its way */
static volatile u32 dry[MAXS];          /* [S]: attempts that found no credit */
static volatile u32 seq_bad[MAXS], seq_v[MAXS], seq_sent[MAXS], seq_recv[MAXS];
static volatile u32 ready, awake, go, done;
static volatile u32 synced[MAXS];       /* [T]: rcvd[T] at T's last exit with IF=0 */

/* govmm's PV send-IPI (apicmode.h), one bitmap per sender covering APIC
 * IDs 0..n-1 (pvwords 64-bit words); a bitmap is 128 bytes, so aligned to
 * that it never crosses a page. */
static u32 pvbm[MAXV][PVW] __attribute__((aligned(128)));

static void pv_clear(u32 s)
{
	for (u32 i = 0; i < 2 * pvwords; i++)
		pvbm[s][i] = 0;
}

/* EOI first (pveoi=1: KVM's PV EOI, see eoi_pv), so that once S sees the
 * receipt the EOI exit is over (and inside the section). */
static void on_ipi(struct frame *f)
{
	int cpu = this_cpu();
	u32 me = cpu_apicid[cpu], v = f->vec - VBASE;
	eoi_pv(cpu);
	u32 r = recv[me][v] + 1, want = sent[v][me];
	if (want != r && !seq_bad[me])
		seq_v[me] = v, seq_sent[me] = want, seq_recv[me] = r - 1, seq_bad[me] = 1;
	recv[me][v] = r;
	rcvd[me]++;
	atomic_dec(&inflight[me]);
}

static volatile u32 woken[MAX_CPUS];
static void on_wake(struct frame *f)
{
	(void)f;
	woken[this_cpu()] = 1;
	apic_eoi();
}

/* ---- the sender ---- */

static inline u32 rnd(u32 *x)           /* xorshift32 */
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* T may take another IPI on slot V: the last one was handled. */
static inline int credit(u32 v, u32 t)
{
	return recv[t][v] == sent[v][t];
}

/* Book one delivery S -> T on slot V before it is sent (see the top comment). */
static inline void reserve(u32 s, u32 v, u32 t)
{
	sent[v][t] = sent[v][t] + 1;
	atomic_inc(&inflight[t]);       /* locked: orders the store before the send */
	addressed[s] = addressed[s] + 1;
}

static void pv_send(u32 s, u32 v)
{
	pv_send_ipi(VBASE + v, pvwords, pvbm[s]);
}

static void send_one(u32 s, u32 v, u32 t)
{
	reserve(s, v, t);
	if (mode == PV) {
		pv_clear(s);
		pvbm[s][t / 32] = 1u << (t % 32);
		pv_send(s, v);
	} else {
		icr_to(t, VBASE + v);
	}
	icrs[s] = icrs[s] + 1;
}

/* A unicast to the first target from a random start that has credit on
 * one of S's slots (tried from a rotating one). */
static int unicast(u32 s, u32 *x, u32 op)
{
	u32 t = rnd(x) % members, k0 = op % K;
	for (u32 i = 0; i < members; i++, t = t + 1 == members ? 0 : t + 1) {
		if (t == s)
			continue;
		for (u32 j = 0, k = k0; j < K; j++, k = k + 1 == K ? 0 : k + 1)
			if (credit(s * K + k, t)) {
				send_one(s, s * K + k, t);
				return 1;
			}
	}
	return 0;
}

/* A multicast on one slot to every target of one window that has credit on
 * it, at most left of them. */
static int multicast(u32 s, u32 *x, u32 left, u32 op)
{
	u32 v = s * K + op / 4 % K;
	/* physical and pv: a window of up to MCAST targets (everyone below
	 * that), so that at scale a multicast is not the whole storm */
	u32 per = logical ? logical_group() : members < MCAST ? members : MCAST;
	u32 base, lim, mask = 0, k = 0;
	base = rnd(x) % ((members + per - 1) / per) * per;
	lim = base + per < members ? base + per : members;
	if (mode == PV)
		pv_clear(s);
	for (u32 t = base; t < lim && k < left; t++) {
		if (t == s || !credit(v, t))
			continue;
		k++;
		if (!logical && mode != PV) {   /* physical: one ICR per target */
			send_one(s, v, t);
			continue;
		}
		reserve(s, v, t);
		if (mode == PV)
			pvbm[s][t / 32] |= 1u << (t % 32);
		else
			mask |= 1u << (t - base);
	}
	if (!k)
		return 0;
	if (mode == PV) {
		pv_send(s, v);
		icrs[s] = icrs[s] + 1;
	} else if (logical) {
		apic_icr(logical_dest(base, mask), ICR_LOGICAL | (VBASE + v));
		icrs[s] = icrs[s] + 1;
	}
	mcasts[s] = mcasts[s] + 1;
	return 1;
}

/* Between sends: even IDs halt if an IPI is on its way to them (IF=0 while
 * checking, so the wake-up cannot be missed), odd ones spin with IF=1 while
 * one is on its way, so it arrives at a running vCPU. */
static void rest(u32 me)
{
	if (!member(me))        /* only sends */
		return;
	if (me % 2 == 0) {
		cli();
		if (inflight[me]) {
			halts[me] = halts[me] + 1;
			asm volatile("sti; hlt" ::: "memory");
		}
		sti();
		return;
	}
	for (u32 i = 0; i < SPIN && inflight[me]; i++)
		pause();
}

static void storm(u32 me)
{
	u32 quota = me >= senders ? 0 : count / senders + (me < count % senders), x = 0x9E3779B9u ^ (me + 1) * 0x85EBCA6Bu, op = 0;
	while (addressed[me] < quota) {
		int sentsome = ++op % 4 == 0 ? multicast(me, &x, quota - addressed[me], op) :
			       unicast(me, &x, op);
		if (!sentsome)
			dry[me] = dry[me] + 1;
		if (!sentsome || op % 8 == 0)
			rest(me);
	}
	atomic_inc(&done);
}

/* After its own sends, for good: receive (halting or spinning as during
 * the storm while an IPI is on its way), and whenever nothing is, make one
 * exit with IF=0 (an APIC read) and publish synced = rcvd, then halt until
 * the next IPI (or forever). govmm takes in a PV EOI, done without an exit,
 * at the next entry: once synced[T] == rcvd[T] for the final count, all of
 * T's EOIs are in govmm's counters, and the BSP may close the section. */
static void drain(u32 me)
{
	cli();
	for (;;) {
		if (!inflight[me]) {
			apic_read(APIC_TPR);
			synced[me] = rcvd[me];
			if (!inflight[me]) {
				asm volatile("sti; hlt; cli" ::: "memory");
				continue;
			}
		}
		if (me % 2 == 0)
			asm volatile("sti; hlt; cli" ::: "memory");
		else
			asm volatile("sti; pause; cli" ::: "memory");
	}
}

static void ap_main(int idx)
{
	u32 me = setup_cpu(idx);
	cpu_apicid[idx] = me;
	atomic_inc(&ready);
	cli();                          /* halt until the BSP's wake-up IPI */
	while (!woken[idx])
		asm volatile("sti; hlt; cli" ::: "memory");
	sti();
	atomic_inc(&awake);
	/* Senders start together at go; a CPU that only receives goes
	 * straight to drain(), which halts while nothing is on its way: with
	 * hundreds of CPUs on a few host CPUs, spinning ones would starve the
	 * wake-up of the rest. */
	while (me < senders && !go)
		pause();
	storm(me);
	drain(me);
}

/* Wait until *c reaches want, for as long as it keeps growing: up to
 * STALL "seconds" without progress (bring-up and wake-up of 1024 vCPUs on
 * a couple of host CPUs take minutes, none of it stalled). */
static int wait_count(volatile u32 *c, u32 want)
{
	u32 last = *c;
	while (WAIT(*c == want || *c != last, STALL))
		if ((last = *c) == want)
			return 1;
	return 0;
}

static u32 total(volatile u32 *a)
{
	u32 t = 0;
	for (u32 i = 0; i < n; i++)
		t += a[i];
	return t;
}

static int all_synced(void)
{
	for (u32 t = 1; t < n; t++)
		if (synced[t] != rcvd[t])
			return 0;
	return 1;
}

/* Print the CPUs that have not made drain()'s exit since their last IPI
 * (what holds the section open once every IPI is received). */
static void show_unsynced(void)
{
	u32 shown = 0;
	for (u32 t = 1; t < n; t++)
		if (synced[t] != rcvd[t] && shown++ < 8)
			printf("# APIC ID %u: received %u, synced %u, inflight %u, halts %u\n", t, rcvd[t], synced[t],
			       inflight[t], halts[t]);
}

/* Print what is still unbalanced: (slot, target, sent, received). */
static void show_pairs(void)
{
	u32 shown = 0;
	for (u32 v = 0; v < senders * K; v++)
		for (u32 t = 0; t < n; t++)
			if (sent[v][t] != recv[t][v] && shown++ < 8)
				printf("# vector %x (sender %u) -> %u: sent %u received %u (inflight[%u]=%u)\n",
				       VBASE + v, v / K, t, sent[v][t], recv[t][v], t, inflight[t]);
}

/* Print the receivers' first sequence breaks; returns how many broke. */
static u32 show_seq(void)
{
	u32 seq = 0;
	for (u32 t = 0; t < n; t++)
		if (seq_bad[t] && seq++ < 4)
			printf("# APIC ID %u: vector %x (sender %u) arrived with sent=%u after %u received\n",
			       t, VBASE + seq_v[t], seq_v[t] / K, seq_sent[t], seq_recv[t]);
	return seq;
}

void test_main(void)
{
	mode_parse();
	count = param_u32("count", 1000000);
	n = ncpus;
	senders = n < MAXV ? n : MAXV;
	K = MAXV / senders > MAXK ? MAXK : MAXV / senders;
	pvwords = (n + 63) / 64;
	members = mode_members(n);
	printf("# mode=%s count=%u pveoi=%d senders=%u vectors_per_sender=%u\n", mode_names[mode], count, pveoi,
	       senders, K);
	if (n < 2 || n > MAXS)
		die("cpus", "%u CPUs: the storm needs 2..%u", n, MAXS);
	mode_require();

	for (u32 v = 0; v < senders * K; v++)
		isr_table[VBASE + v] = on_ipi;
	isr_table[V_WAKE] = on_wake;
	setup_bsp();
	smp_boot(ap_main);
	if (!wait_count(&ready, n - 1))
		die("ap bring-up", "%u of %u APs ready", ready, n - 1);
	check_cpus();
	printf("ok %u cpus up, mode %s, %u receivers\n", n, mode_names[mode], members);

	/* Wake the halted APs outside the section; they then spin on go. */
	apic_icr_short(ICR_ALLBUT | V_WAKE);
	if (!wait_count(&awake, n - 1))
		die("wake", "%u of %u APs woke", awake, n - 1);

	/* ---- section 1: the storm ---- */
	section(1);
	u64 t0 = rdtsc();
	go = 1;
	sti();
	storm(0);
	u32 last_r = 0, last_a = 0, r, a;
	u64 since = rdtsc();
	/* The BSP receives with IF=1 while it watches, then makes drain()'s
	 * exit. Watchdog: progress or die. */
	for (;;) {
		u32 d = done;           /* first: if all are done, the counts below are final */
		r = total(rcvd), a = total(addressed);
		if (d == n && r == a && all_synced())
			break;
		if (r != last_r || a != last_a) {
			last_r = r, last_a = a, since = rdtsc();
		} else if (rdtsc() - since > STALL * TSC_SEC) {
			section(0);
			printf("# stalled: %u of %u senders done\n", done, n);
			show_unsynced();
			show_pairs();
			show_seq();
			die("storm", "no progress: %u deliveries addressed, %u received", a, r);
		}
		for (int i = 0; i < 100; i++)
			pause();
	}
	apic_read(APIC_TPR);
	u64 ticks = rdtsc() - t0;
	section(0);

	/* ---- exactly once ---- */
	delay(TSC_SEC / 20);            /* a late duplicate would show now */
	u32 bad = 0, seq = show_seq();
	for (u32 v = 0; v < senders * K; v++)
		for (u32 t = 0; t < n; t++)
			bad += sent[v][t] != recv[t][v];
	r = total(rcvd), a = total(addressed);
	if (bad)
		show_pairs();
	check(!bad, "every (vector, target) pair received exactly what was sent",
	      "%u pairs differ", bad);
	check(!seq, "every IPI arrived in sequence (no duplicate, no stray)",
	      "%u receivers saw a break", seq);
	check(r == count && a == count, "deliveries add up to count",
	      "addressed %u, received %u, count %u", a, r, count);
	u32 idle = 0, spin = 0;
	for (u32 i = 0; i < members; i++)
		if (i % 2 == 0)
			idle += halts[i];
		else
			spin++;
	printf("# storm mode=%s cpus=%u receivers=%u count=%u sent=%u received=%u icr_writes=%u "
	       "multicasts=%u halts=%u spinners=%u no_credit=%u tsc_2^20=%u\n",
	       mode_names[mode], n, members, count, a, r, total(icrs), total(mcasts), idle, spin,
	       total(dry), (u32)(ticks >> 20));
}
