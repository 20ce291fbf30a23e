/* intremap: the VT-d interrupt-remapping unit at 0xFED90000, programmed the
 * way Linux does (drivers/iommu/intel/irq_remapping.c, dmar.c), with IOAPIC
 * pins (pc-testdev lines) and MSIs from the govmm MSI test device (ports
 * 0x2100 address low, 0x2104 address high, 0x2108 source-id, 0x210C data:
 * the write sends, a read says whether the last MSI reached a CPU).
 *
 * cmdline: mode=xapic|x2apic (default x2apic if CPUID has x2APIC)
 *            xapic:  IRTA.EIME=0, 8-bit destinations (IRTE DST bits 15:8);
 *                    the CPUs run xAPIC (x2APIC when cpus > 255 or x2apic=1)
 *            x2apic: IRTA.EIME=1, 32-bit destinations; every CPU in x2APIC
 *          x2apic=1 (with mode=xapic: CPUs in x2APIC mode anyway)
 * cpus from fw_cfg; APIC IDs must equal CPU indices. With cpus >= 288 and
 * mode=x2apic, pins and MSIs also go to APIC IDs 256 and 287 and to a
 * cluster destination in cluster 17 (run with --cpus 288).
 *
 * Set-up (as Linux): IRT of 256 entries (4 KiB aligned), IRTA = table |
 * EIME | S=7; GCMD.SIRTP, wait GSTS.IRTPS; IQT = 0, IQA = queue (QS 0: 256
 * descriptors); GCMD.QIE, wait QIES; global interrupt-entry-cache
 * invalidation + invalidation wait (status write), polled; GCMD.IRE, wait
 * IRES; CFI stays clear. Every GCMD write is the persistent command bits
 * (Linux's iommu->gcmd) plus at most one new command. Every IRTE change is
 * followed by an index-selective IEC invalidation + wait (modify_irte).
 * Fault events: FEDATA = vector 0xE0, FEADDR = BSP, FECTL unmasked. */
#include "rt.h"

const char guest_name[] = "intremap";

#define IR        0xFED90000u
#define R_VER     0x00
#define R_CAP     0x08
#define R_ECAP    0x10
#define R_GCMD    0x18
#define R_GSTS    0x1C
#define R_FSTS    0x34
#define R_FECTL   0x38
#define R_FEDATA  0x3C
#define R_FEADDR  0x40
#define R_FEUADDR 0x44
#define R_IQH     0x80
#define R_IQT     0x88
#define R_IQA     0x90
#define R_ICS     0x9C
#define R_IRTA    0xB8
#define G_QIE   (1u << 26)
#define G_IRE   (1u << 25)
#define G_SIRTP (1u << 24)
#define G_CFI   (1u << 23)
#define FSTS_PFO 1u
#define FSTS_PPF 2u
#define FSTS_IQE 0x10u

/* IRTE low qword bits */
#define E_P    1u
#define E_FPD  2u
#define E_DM   4u
#define E_TM   0x10u
#define E_LOWPRI (1u << 5)
#define SVT_SID 1u                      /* verify all 16 bits of SID (SQ=0) */

#define NIRTE 256
#define SID_DEV  0x0010                 /* the MSI test device, 00:02.0 */
#define SID_IOAPIC 0xFF00

enum {
	V_MSI = 0x51, V_SHV = 0x52, V_WRONG = 0x53, V_AP = 0x54, V_PIN = 0x55, V_LVL = 0x56,
	V_COMPAT = 0x57, V_NEW = 0x58, V_CL = 0x59, V_BIG = 0x5A, V_FAULT = 0xE0,
};

static u64 irt[NIRTE * 2] __attribute__((aligned(4096)));
static u64 iq[256 * 2] __attribute__((aligned(4096)));
static volatile u32 qstat[2] __attribute__((aligned(8)));
static u32 qtail, gcmd, fro, nfr;
static int eim;                         /* IRTA.EIME */
static u32 n;

static volatile u32 vcnt[256];          /* deliveries per vector */
static volatile u32 pc_cnt[MAX_CPUS], pc_vec[MAX_CPUS]; /* per APIC ID */
static volatile u8 defer_eoi[256];
static volatile u32 ready;
static u32 snap_cnt[MAX_CPUS];

static inline u32 r32(u32 o) { return *(volatile u32 *)(IR + o); }
static inline void w32(u32 o, u32 v) { *(volatile u32 *)(IR + o) = v; }
static inline u64 r64(u32 o) { u32 lo = r32(o); return (u64)r32(o + 4) << 32 | lo; }
static inline void w64(u32 o, u64 v) { w32(o, (u32)v); w32(o + 4, (u32)(v >> 32)); } /* lo_hi_writeq */

static void on_irq(struct frame *f)
{
	u32 v = f->vec, me = cpu_apicid[this_cpu()];
	if (!defer_eoi[v] || me != 0)
		apic_eoi();
	if (me < MAX_CPUS) {
		pc_vec[me] = v;
		pc_cnt[me]++;
	}
	atomic_inc(&vcnt[v]);
}

static void quiet(void) { delay(TSC_SEC / 50); }

/* ---- GCMD / GSTS ---- */
static int gcmd_wait(u32 cmd, u32 sts_mask, u32 sts_want, const char *what)
{
	w32(R_GCMD, cmd);
	if (WAIT((r32(R_GSTS) & sts_mask) == sts_want, 2))
		return 1;
	fail(what, "GCMD %x written, GSTS %x: want bits %x = %x", cmd, r32(R_GSTS), sts_mask, sts_want);
	return 0;
}

/* ---- invalidation queue ---- */
static int qi_submit(u64 lo, u64 hi, const char *what)
{
	iq[2 * qtail] = lo;
	iq[2 * qtail + 1] = hi;
	qtail = (qtail + 1) % 256;
	qstat[0] = 1;                                         /* QI_IN_USE */
	iq[2 * qtail] = 0x5 | 1u << 5 | (u64)2 << 32;         /* wait, SW, data QI_DONE */
	iq[2 * qtail + 1] = (u32)&qstat[0];
	qtail = (qtail + 1) % 256;
	w32(R_IQT, qtail << 4);
	if (WAIT(qstat[0] == 2, 2))
		return 1;
	fail(what, "invalidation wait status %x, IQH %x IQT %x FSTS %x", qstat[0], r32(R_IQH),
	     r32(R_IQT), r32(R_FSTS));
	return 0;
}

static void iec_flush(int idx) { qi_submit(0x4 | 1u << 4 | (u64)idx << 32, 0, "iec index invalidation"); }

/* ---- IRTEs ---- */
static void irte(int i, u32 flags, u32 vec, u32 dst, u32 sid, u32 svt)
{
	u32 d = eim ? dst : (dst & 0xFF) << 8;
	irt[2 * i] = (u64)d << 32 | vec << 16 | flags;
	irt[2 * i + 1] = (u64)svt << 18 | sid;
	iec_flush(i);
}

static u32 rem_addr(u32 idx, int shv)
{
	return 0xFEE00000u | (idx & 0x7FFF) << 5 | 0x10 | (shv ? 8 : 0) | (idx >> 15 & 1) << 2;
}

/* one MSI through the test device; returns its "delivered" flag */
static u32 msi(u32 addr, u32 data, u32 sid)
{
	outl(0x2100, addr);
	outl(0x2104, 0);
	outl(0x2108, sid);
	outl(0x210C, data);
	return inl(0x210C);
}

/* remappable IOAPIC RTE for IRT index idx */
static u64 rem_rte(u32 idx, u32 vec, u32 flags)
{
	return (u64)(1u << 16 | (idx & 0x7FFF) << 17) << 32 | (idx >> 15 & 1) << 11 | flags | vec;
}

static void snap(void)
{
	for (u32 i = 0; i < n; i++)
		snap_cnt[i] = pc_cnt[i];
}

/* Since snap(): exactly the APIC IDs in ids[] got one interrupt each, with
 * vector vec, and nobody else got anything. */
static int expect(const char *what, u32 vec, u32 base, const u32 *ids, int nids)
{
	WAIT(vcnt[vec] >= base + nids, 5);
	quiet();
	u32 bad = 0;
	for (u32 id = 0; id < n; id++) {
		u32 want = 0, d = pc_cnt[id] - snap_cnt[id];
		for (int k = 0; k < nids; k++)
			want += ids[k] == id;
		if (d != want || (d && pc_vec[id] != vec)) {
			if (!bad++)
				fail(what, "APIC ID %u got %u interrupts (last vector %x), want %u of vector %x",
				     id, d, pc_vec[id], want, vec);
		}
	}
	if (!bad && vcnt[vec] != base + nids) {
		fail(what, "vector %x delivered %u times, want %u", vec, vcnt[vec] - base, nids);
		bad++;
	}
	if (!bad)
		ok(what);
	return !bad;
}

static int msi_to(const char *what, u32 addr, u32 data, u32 sid, u32 vec, const u32 *ids, int nids)
{
	snap();
	u32 base = vcnt[vec];
	u32 d = msi(addr, data, sid);
	if (!d) {
		fail(what, "MSI %x/%x sid %x reported blocked (FSTS %x)", addr, data, sid, r32(R_FSTS));
		return 0;
	}
	return expect(what, vec, base, ids, nids);
}

static int pin_edge_to(const char *what, int pin, u64 rte, u32 vec, const u32 *ids, int nids)
{
	snap();
	u32 base = vcnt[vec];
	ioapic_set_rte(pin, rte);
	line(pin, 1);
	line(pin, 0);
	int r = expect(what, vec, base, ids, nids);
	ioapic_set_rte(pin, RTE_MASKED);
	return r;
}

/* ---- fault records ---- */
static u32 fr_hi(u32 i) { return r32(fro + 16 * i + 12); }

static u32 pending_records(void)
{
	u32 k = 0;
	for (u32 i = 0; i <= nfr; i++)
		k += fr_hi(i) >> 31;
	return k;
}

/* The last request must have left exactly one record (reason, sid, index
 * unless idx < 0) and, if want_irq, raised one fault event on the BSP. The
 * record is cleared (F write-1-to-clear) and PPF must drop. */
static void fault_check(const char *what, u32 reason, u32 sid, int idx, u32 irq_base, int want_irq)
{
	u32 fsts = r32(R_FSTS);
	if (!(fsts & FSTS_PPF)) {
		fail(what, "no fault recorded: FSTS %x", fsts);
		return;
	}
	u32 fri = fsts >> 8 & 0xFF;
	u32 hi = fr_hi(fri), sidr = r32(fro + 16 * fri + 8);
	u64 lo = r64(fro + 16 * fri);
	u32 gotidx = (u32)(lo >> 48);
	int good = hi >> 31 && (hi & 0xFF) == reason && (sidr & 0xFFFF) == sid &&
		   (idx < 0 || gotidx == (u32)idx) && pending_records() == 1;
	if (good)
		printf("ok %s: fault record %u reason %x sid %x index %u, FSTS.PPF\n", what, fri, reason,
		       sid, gotidx);
	else
		fail(what, "record %u: F %u reason %x sid %x index %u (%u records pending); want reason %x sid %x index %d",
		     fri, hi >> 31, hi & 0xFF, sidr & 0xFFFF, gotidx, pending_records(), reason, sid, idx);
	if (want_irq) {
		WAIT(vcnt[V_FAULT] >= irq_base + 1, 2);
		quiet();
		check(vcnt[V_FAULT] == irq_base + 1 && pc_vec[0] == V_FAULT,
		      want_irq == 2 ? "  fault event interrupt on the BSP after unmask" :
		      "  fault event interrupt (vector 0xE0) on the BSP",
		      "%u fault events", vcnt[V_FAULT] - irq_base);
	}
	for (u32 i = 0; i <= nfr; i++)
		if (fr_hi(i) >> 31)
			w32(fro + 16 * i + 12, 1u << 31);
	w32(R_FSTS, FSTS_PFO | FSTS_PPF);     /* as Linux dmar_fault(); PPF itself is RO */
	fsts = r32(R_FSTS);
	if (fsts & (FSTS_PPF | FSTS_PFO))
		fail(what, "FSTS %x after clearing the record", fsts);
}

static void fault_msi(const char *what, u32 addr, u32 data, u32 sid, u32 reason, int idx)
{
	u32 f0 = vcnt[V_FAULT], tot0 = 0, tot1 = 0;
	for (int v = 0x40; v < 0xE0; v++)
		tot0 += vcnt[v];
	u32 d = msi(addr, data, sid);
	for (int v = 0x40; v < 0xE0; v++)
		tot1 += vcnt[v];
	if (d || tot1 != tot0)
		fail(what, "not blocked: delivered flag %u, %u interrupts", d, tot1 - tot0);
	fault_check(what, reason, sid, idx, f0, 1);
}

/* ---- set-up ---- */
static int setup_unit(int want_eim)
{
	u32 ver = r32(R_VER);
	u64 cap = r64(R_CAP), ecap = r64(R_ECAP);
	if (ver == 0xFFFFFFFF)
		die("unit", "VER reads ffffffff: no remapping unit at fed90000");
	fro = (u32)(cap >> 24 & 0x3FF) * 16;
	nfr = (u32)(cap >> 40 & 0xFF);
	printf("# VER %x CAP %x:%08x ECAP %x:%08x: FRO %x NFR %u, IR %u QI %u EIM %u\n", ver,
	       (u32)(cap >> 32), (u32)cap, (u32)(ecap >> 32), (u32)ecap, fro, nfr + 1,
	       (u32)(ecap >> 3 & 1), (u32)(ecap >> 1 & 1), (u32)(ecap >> 4 & 1));
	if (!check((ecap & 0xA) == 0xA, "ECAP advertises IR and QI", "ECAP %x", (u32)ecap))
		return 0;
	check(!!(ecap & 0x10) == has_x2apic(), has_x2apic() ? "ECAP.EIM advertised (VM has x2APIC)" :
	      "ECAP.EIM clear (VM has no x2APIC)", "ECAP %x", (u32)ecap);
	if (want_eim && !(ecap & 0x10))
		die("mode=x2apic", "ECAP.EIM clear: 32-bit destinations unavailable");
	check(fro >= 0x100 && fro + 16 * (nfr + 1) <= 0x1000, "fault recording registers inside the page",
	      "FRO %x NFR %u", fro, nfr + 1);
	u32 gsts = r32(R_GSTS), fectl = r32(R_FECTL);
	check(gsts == 0, "GSTS 0 at reset", "GSTS %x", gsts);
	check(fectl == 0x80000000, "FECTL.IM set at reset", "FECTL %x", fectl);

	eim = want_eim;
	u64 irta = (u32)irt | (eim ? 1u << 11 : 0) | 7;        /* 2^(7+1) = 256 entries */
	w64(R_IRTA, irta);
	u64 rb = r64(R_IRTA);
	check(rb == irta, "IRTA reads back (table, EIME, S=7)", "wrote %x, reads %x", (u32)irta, (u32)rb);
	if (!gcmd_wait(gcmd | G_SIRTP, G_SIRTP, G_SIRTP, "GCMD.SIRTP"))
		return 0;
	ok("GCMD.SIRTP -> GSTS.IRTPS");

	/* dmar.c __dmar_enable_qi */
	qtail = 0;
	w64(R_IQT, 0);
	w64(R_IQA, (u32)iq);                                  /* QS 0: one 4 KiB page */
	gcmd |= G_QIE;
	if (!gcmd_wait(gcmd, G_QIE, G_QIE, "GCMD.QIE"))
		return 0;
	check(r32(R_IQH) == 0 && (r64(R_IQA) & ~0xFFFull) == (u32)iq, "GCMD.QIE -> GSTS.QIES, IQH 0, IQA set",
	      "IQH %x IQA %x", r32(R_IQH), (u32)r64(R_IQA));

	/* qi_global_iec */
	if (!qi_submit(0x4, 0, "global IEC invalidation"))
		return 0;
	check(r32(R_IQH) == r32(R_IQT) && r32(R_IQT) == 2 << 4 && !(r32(R_FSTS) & FSTS_IQE),
	      "global IEC invalidation + wait descriptor: status written, IQH = IQT",
	      "IQH %x IQT %x FSTS %x", r32(R_IQH), r32(R_IQT), r32(R_FSTS));
	/* an invalidation wait with IF: ICS.IWC (IECTL stays masked) */
	iq[2 * qtail] = 0x5 | 1u << 4;
	iq[2 * qtail + 1] = 0;
	qtail = (qtail + 1) % 256;
	w32(R_IQT, qtail << 4);
	check(WAIT(r32(R_ICS) & 1, 2), "invalidation wait with IF sets ICS.IWC", "ICS %x", r32(R_ICS));
	w32(R_ICS, 1);
	check(!(r32(R_ICS) & 1), "ICS.IWC write-1-to-clear", "ICS %x", r32(R_ICS));

	/* fault events to the BSP before anything can fault */
	w32(R_FEDATA, V_FAULT);
	w32(R_FEADDR, 0xFEE00000);
	w32(R_FEUADDR, 0);
	w32(R_FECTL, 0);

	gcmd |= G_IRE;
	if (!gcmd_wait(gcmd, G_IRE | G_QIE | G_CFI, G_IRE | G_QIE, "GCMD.IRE"))
		return 0;
	ok("GCMD.IRE (with QIE rewritten) -> GSTS.IRES, QIES kept, CFIS clear");
	/* Linux re-points the table on resume: SIRTP with the persistent bits */
	if (gcmd_wait(gcmd | G_SIRTP, G_SIRTP | G_IRE | G_QIE, G_SIRTP | G_IRE | G_QIE, "SIRTP again"))
		ok("SIRTP with IRE|QIE rewritten keeps IRES and QIES");
	return 1;
}

static void ap_main(int idx)
{
	if (x2apic)                     /* x2APIC before anything else */
		x2apic_enable();
	u32 id = apic_id();
	apic_write(APIC_SVR, 0x1FF);
	if (!x2apic) {
		apic_write(APIC_DFR, 0xFFFFFFFF);
		apic_write(APIC_LDR, id < 8 ? 1u << (24 + id) : 0);
	}
	cpu_apicid[idx] = id;
	atomic_inc(&ready);
	for (;;)
		asm volatile("sti; hlt");
}

static u32 cluster_id(u32 id) { return (id >> 4) << 16 | 1u << (id & 15); }

/* logical destination naming APIC ID t alone, or ~0 if none */
static u32 logical_dst(u32 t)
{
	if (x2apic)
		return eim ? cluster_id(t) : ~0u;               /* 8-bit: not for x2APIC CPUs */
	return t < 8 ? 1u << t : ~0u;
}

static void delivery_tests(void)
{
	u32 bsp[1] = {0};
	/* MSI, SHV=0, physical to the BSP, SVT=1 SID match */
	irte(5, E_P, V_MSI, 0, SID_DEV, SVT_SID);
	msi_to("MSI index 5 (SHV=0) -> BSP with the IRTE's vector 0x51", rem_addr(5, 0), 0, SID_DEV,
	       V_MSI, bsp, 1);
	/* SHV=1: handle 8 + subhandle 3 = index 11; data 3 is no vector */
	irte(8, E_P, V_WRONG, 0, SID_DEV, SVT_SID);
	irte(11, E_P, V_SHV, 0, SID_DEV, SVT_SID);
	msi_to("MSI handle 8 + subhandle 3 (SHV=1) -> index 11, vector 0x52", rem_addr(8, 1), 3, SID_DEV,
	       V_SHV, bsp, 1);
	/* SVT=0: no source check */
	irte(6, E_P, V_MSI, 0, 0x1234, 0);
	msi_to("MSI with SVT=0: any requester", rem_addr(6, 0), 0, 0x0777, V_MSI, bsp, 1);
	/* change an IRTE, invalidate it, the new vector is used */
	irte(5, E_P, V_NEW, 0, SID_DEV, SVT_SID);
	msi_to("IRTE 5 changed + index IEC invalidation: new vector 0x58", rem_addr(5, 0), 0, SID_DEV,
	       V_NEW, bsp, 1);

	/* IOAPIC pins through IRTEs */
	irte(20, E_P, V_PIN, 0, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 10 edge via IRTE 20 -> BSP, IRTE vector 0x55 (RTE vector 0x99)", 10,
		    rem_rte(20, 0x99, 0), V_PIN, bsp, 1);
	irte(21, E_P | E_TM, V_LVL, 0, SID_IOAPIC, SVT_SID);
	defer_eoi[V_LVL] = 1;
	u32 c0 = vcnt[V_LVL];
	ioapic_set_rte(11, rem_rte(21, V_LVL, RTE_LEVEL));
	line(11, 1);
	if (WAIT(vcnt[V_LVL] == c0 + 1, 5)) {
		u32 lo = ioapic_read(0x10 + 22);
		u32 tmr = apic_read(APIC_TMR + (V_LVL >> 5) * 0x10) >> (V_LVL & 31) & 1;
		quiet();
		check((lo & RTE_RIRR) && tmr && vcnt[V_LVL] == c0 + 1,
		      "IOAPIC pin 11 level via IRTE 21 (TM=1): fires once, Remote IRR, TMR",
		      "RTE %x TMR %u count %u", lo, tmr, vcnt[V_LVL] - c0);
		apic_eoi();
		check(WAIT(vcnt[V_LVL] == c0 + 2, 5), "remapped level: EOI of vector 0x56 clears Remote IRR, still-high line re-fires",
		      "count %u, RTE %x", vcnt[V_LVL] - c0, ioapic_read(0x10 + 22));
		line(11, 0);
		apic_eoi();
		quiet();
		lo = ioapic_read(0x10 + 22);
		check(!(lo & RTE_RIRR) && vcnt[V_LVL] == c0 + 2, "remapped level: line low + EOI: quiet",
		      "RTE %x count %u", lo, vcnt[V_LVL] - c0);
	} else {
		fail("remapped level pin", "no interrupt (FSTS %x)", r32(R_FSTS));
	}
	line(11, 0);
	ioapic_set_rte(11, RTE_MASKED);
	defer_eoi[V_LVL] = 0;

	if (n < 2) {
		printf("# AP destinations skipped: 1 cpu\n");
		return;
	}
	u32 t = n - 1;
	if (!eim && t > 254)
		t = 254;
	u32 ap[1] = {t};
	irte(12, E_P, V_AP, t, SID_DEV, SVT_SID);
	msi_to("MSI -> AP (physical, APIC ID of the last AP)", rem_addr(12, 0), 0, SID_DEV, V_AP, ap, 1);
	irte(22, E_P, V_AP, t, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 10 -> AP (physical) via IRTE 22", 10, rem_rte(22, V_AP, 0), V_AP, ap, 1);
	u32 lt = x2apic ? t : (t < 7 ? t : 7), ld = logical_dst(lt);
	u32 lap[1] = {lt};
	if (ld == ~0u) {
		printf("# logical destination skipped (8-bit logical with x2APIC CPUs)\n");
		return;
	}
	irte(13, E_P | E_DM, V_CL, ld, SID_DEV, SVT_SID);
	msi_to(x2apic ? "MSI -> x2APIC cluster destination of the last AP" : "MSI -> flat logical destination",
	       rem_addr(13, 0), 0, SID_DEV, V_CL, lap, 1);
	irte(23, E_P | E_DM, V_CL, ld, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 10 -> logical destination via IRTE 23", 10, rem_rte(23, V_CL, 0), V_CL, lap, 1);
	if (n >= 3 && lt >= 2) {                 /* two CPUs of one cluster / flat group */
		u32 a = lt - 1, two[2] = {a, lt};
		u32 d2 = x2apic ? cluster_id(lt) | 1u << (a & 15) : 1u << lt | 1u << a;
		if (!x2apic || a >> 4 == lt >> 4) {
			irte(14, E_P | E_DM, V_CL, d2, SID_DEV, SVT_SID);
			msi_to("MSI -> logical destination naming two CPUs: both", rem_addr(14, 0), 0, SID_DEV,
			       V_CL, two, 2);
		}
	}
}

static void fault_tests(void)
{
	/* compatibility format, CFI clear */
	fault_msi("compatibility-format MSI blocked (CFI clear)", 0xFEE00000, V_COMPAT, SID_DEV, 0x25, -1);
	fault_msi("index 300 beyond the 256-entry table", rem_addr(300, 0), 0, SID_DEV, 0x21, 300);
	irte(30, 0, V_MSI, 0, SID_DEV, SVT_SID);                /* P clear */
	fault_msi("non-present IRTE 30", rem_addr(30, 0), 0, SID_DEV, 0x22, 30);
	irte(31, E_P | 0x01000000, V_MSI, 0, SID_DEV, SVT_SID);  /* bits 31:24 reserved */
	fault_msi("IRTE 31 with reserved bits 31:24 set", rem_addr(31, 0), 0, SID_DEV, 0x24, 31);
	irte(32, E_P, V_MSI, 0, SID_DEV, SVT_SID);
	fault_msi("SID mismatch (IRTE 32 SID 0x0010, SVT=1, request 0x0011)", rem_addr(32, 0), 0, 0x0011,
		  0x26, 32);
	fault_msi("remappable request with reserved data bits 31:16 (SHV=1)", rem_addr(32, 1), 0x10000,
		  SID_DEV, 0x20, -1);

	/* the IOAPIC as requester: SID 0xFF00 checked against the IRTE */
	irte(33, E_P, V_PIN, 0, 0xFF08, SVT_SID);
	u32 f0 = vcnt[V_FAULT], p0 = vcnt[V_PIN];
	ioapic_set_rte(10, rem_rte(33, V_PIN, 0));
	line(10, 1);
	line(10, 0);
	quiet();
	ioapic_set_rte(10, RTE_MASKED);
	check(vcnt[V_PIN] == p0, "IOAPIC pin through IRTE with SID 0xFF08: blocked", "delivered");
	fault_check("IOAPIC requester id in the fault record", 0x26, SID_IOAPIC, 33, f0, 1);

	/* FPD: qualified faults are not recorded */
	irte(34, E_P | E_FPD, V_MSI, 0, SID_DEV, SVT_SID);
	irte(35, E_FPD, V_MSI, 0, SID_DEV, SVT_SID);
	f0 = vcnt[V_FAULT];
	u32 d1 = msi(rem_addr(34, 0), 0, 0x0011), d2 = msi(rem_addr(35, 0), 0, SID_DEV);
	quiet();
	u32 fsts = r32(R_FSTS);
	check(!d1 && !d2 && !(fsts & FSTS_PPF) && !pending_records() && vcnt[V_FAULT] == f0,
	      "FPD set: SID mismatch and non-present entry blocked, no record, no fault event",
	      "delivered %u/%u FSTS %x records %u fault events %u", d1, d2, fsts, pending_records(),
	      vcnt[V_FAULT] - f0);
	if (fsts & FSTS_PPF)
		fault_check("(clean-up)", 0, 0, -1, 0, 0);

	/* masked fault event: IP set, the interrupt comes on unmask */
	w32(R_FECTL, 1u << 31);
	f0 = vcnt[V_FAULT];
	msi(rem_addr(30, 0), 0, SID_DEV);
	quiet();
	u32 fectl = r32(R_FECTL);
	check(fectl == 0xC0000000 && vcnt[V_FAULT] == f0, "FECTL masked: fault leaves IP set, no event",
	      "FECTL %x, %u events", fectl, vcnt[V_FAULT] - f0);
	w32(R_FECTL, 0);
	fault_check("masked fault (non-present IRTE 30)", 0x22, SID_DEV, 30, f0, 2);
	check(r32(R_FECTL) == 0, "FECTL.IP clear after the event", "FECTL %x", r32(R_FECTL));

	/* CFI set (Linux never does): compatibility format passes, but only
	 * with EIME=0; with EIME=1 CFI has no effect (spec 10.4.4, GCMD.CFI). */
	if (gcmd_wait(gcmd | G_CFI, G_CFI, G_CFI, "GCMD.CFI")) {
		u32 bsp[1] = {0};
		if (eim)
			fault_msi("CFI set with EIME=1: compatibility format still blocked", 0xFEE00000,
				  V_COMPAT, SID_DEV, 0x25, -1);
		else
			msi_to("CFI set (EIME=0): compatibility-format MSI passes through", 0xFEE00000,
			       V_COMPAT, SID_DEV, V_COMPAT, bsp, 1);
		if (gcmd_wait(gcmd, G_CFI | G_IRE | G_QIE, G_IRE | G_QIE, "GCMD.CFI clear"))
			ok("CFI cleared again (IRE, QIE kept)");
	}
}

static void big_tests(void)
{
	u32 a[1] = {256}, b[1] = {287}, cl[2] = {273, 287};
	irte(40, E_P, V_BIG, 256, SID_DEV, SVT_SID);
	msi_to("MSI -> APIC ID 256 (32-bit physical destination)", rem_addr(40, 0), 0, SID_DEV, V_BIG, a, 1);
	irte(41, E_P, V_BIG, 287, SID_DEV, SVT_SID);
	msi_to("MSI -> APIC ID 287", rem_addr(41, 0), 0, SID_DEV, V_BIG, b, 1);
	irte(42, E_P, V_BIG, 256, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 12 -> APIC ID 256", 12, rem_rte(42, V_BIG, 0), V_BIG, a, 1);
	irte(42, E_P, V_BIG, 287, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 12 -> APIC ID 287 (IRTE 42 rewritten)", 12, rem_rte(42, V_BIG, 0), V_BIG, b, 1);
	u32 cd = 17u << 16 | 1u << 1 | 1u << 15;                /* IDs 273 and 287 */
	irte(43, E_P | E_DM, V_CL, cd, SID_DEV, SVT_SID);
	msi_to("MSI -> cluster 17 mask 0x8002 (APIC IDs 273, 287)", rem_addr(43, 0), 0, SID_DEV, V_CL, cl, 2);
	irte(44, E_P | E_DM, V_CL, cd, SID_IOAPIC, SVT_SID);
	pin_edge_to("IOAPIC pin 12 -> cluster 17 mask 0x8002", 12, rem_rte(44, V_CL, 0), V_CL, cl, 2);
	irte(45, E_P | E_DM | E_LOWPRI, V_CL, cd, SID_DEV, SVT_SID);
	snap();
	u32 base = vcnt[V_CL];
	msi(rem_addr(45, 0), 0, SID_DEV);
	WAIT(vcnt[V_CL] >= base + 1, 5);
	quiet();
	u32 d273 = pc_cnt[273] - snap_cnt[273], d287 = pc_cnt[287] - snap_cnt[287];
	check(vcnt[V_CL] == base + 1 && d273 + d287 == 1, "MSI lowest priority -> cluster 17 mask 0x8002: one of the two",
	      "%u deliveries, 273: %u 287: %u", vcnt[V_CL] - base, d273, d287);
}

void test_main(void)
{
	n = ncpus;
	const char *m = param("mode");
	int want_eim;
	if (!m)
		want_eim = has_x2apic();
	else if (streq(m, "x2apic"))
		want_eim = 1;
	else if (streq(m, "xapic"))
		want_eim = 0;
	else
		die("mode", "mode=%s: want xapic|x2apic", m);
	int cpu_x2 = want_eim || n > 255 || param_u32("x2apic", 0);
	if (cpu_x2 && !x2apic_enable())
		die("x2apic", "CPUID.1:ECX bit 21 clear: needed for mode=x2apic or more than 255 cpus");
	printf("# mode=%s (IRTA.EIME=%u), CPUs in %s, %u cpus\n", want_eim ? "x2apic" : "xapic", want_eim,
	       x2apic ? "x2APIC" : "xAPIC", n);
	for (int v = 0x20; v < 0x100; v++)
		isr_table[v] = on_irq;
	bsp_apic_setup();
	sti();

	if (n > 1) {
		smp_boot(ap_main);
		if (!WAIT(ready == n - 1, 120))
			die("ap bring-up", "%u of %u APs ready", ready, n - 1);
		static u8 seen[MAX_CPUS];
		for (u32 i = 0; i < n; i++) {
			u32 id = cpu_apicid[i];
			if (id >= n || seen[id])
				die("apic ids", "cpu index %u has APIC ID %u: want distinct 0..%u", i, id, n - 1);
			seen[id] = 1;
		}
		printf("ok %u cpus up in %s mode, APIC IDs 0..%u\n", n, x2apic ? "x2APIC" : "xAPIC", n - 1);
	}

	/* before IRE: compatibility format goes straight to the APIC */
	u32 bsp[1] = {0};
	msi_to("remapping off: compatibility-format MSI delivered", 0xFEE00000, V_COMPAT, SID_DEV, V_COMPAT, bsp, 1);

	if (!setup_unit(want_eim))
		finish();
	delivery_tests();
	fault_tests();
	if (n >= 288 && eim)
		big_tests();
	else
		printf("# APIC IDs 256/287 and cluster 17: skipped (need cpus >= 288 and mode=x2apic)\n");
	quiet();
	u32 stray = 0;
	for (int v = 0x20; v < 0x100; v++)
		if (v != V_MSI && v != V_SHV && v != V_AP && v != V_PIN && v != V_LVL && v != V_COMPAT &&
		    v != V_NEW && v != V_CL && v != V_BIG && v != V_FAULT)
			stray += vcnt[v];
	check(!stray && !pending_records(), "no stray interrupts, no fault records left",
	      "%u stray interrupts, %u records", stray, pending_records());
}
