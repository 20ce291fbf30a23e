/* fuzz: the guest attacks the VMM. From every vCPU at once, for secs=S
 * seconds (10), it makes random and boundary-value accesses to everything
 * govmm's exit bus serves, read from the map govmm hands over fw_cfg
 * ("etc/govmm/busmap", exitbus/mapfile.go): MMIO of every size and
 * alignment (and string MOVs) to the LAPIC page (also relocated), IOAPIC,
 * remapping unit, PCI ECAM, BARs and MSI-X tables; PIO to every claimed
 * port (string I/O too) and unclaimed ones; RDMSR/WRMSR over the x2APIC
 * range, the claimed MSRs and random indices; ICR writes of every delivery
 * mode, shorthand and destination (INIT and SIPI included); remapping
 * tables, invalidation queues and virtqueues pointed at a garbage arena
 * that the CPUs keep rewriting; APIC mode switches in the middle of it.
 *
 * init=0 leaves INIT and SIPI out of everything the fuzz writes (ICRs,
 * device messages, redirection and remapping entries, garbage): only the
 * monitor's restart of a stopped CPU sends them (tests/guestfuzz_test.go).
 * SMIs are left out the same way unless smi=1: a CPU that takes one
 * enters SMM at SMBASE + 0x8000, which every CPU has at 0x30000 from
 * reset, so two CPUs in SMM at once overwrite each other's saved state
 * (firmware relocates SMBASE per CPU first; this guest has none). With
 * smi=1 they go in, and 0x38000 holds an RSM (smi.elf tests SMM itself).
 * seed=N (1) seeds every CPU's generator (CPU i: N and its APIC ID); the
 * seed is the first thing printed, so `govmm run fuzz.elf seed=N` replays
 * a run (the interleaving of CPUs is the host's). A fault of any kind or
 * an interrupt abandons the access (longjmp to the loop: the frame is
 * never trusted, since an exception vector may arrive as an interrupt
 * without its error code); NMIs are counted and return.
 *
 * What the guest itself keeps (its invariants; a broken one is FAIL):
 * its code, read-only data and IDT are unchanged (checksummed), and every
 * CPU's heartbeat keeps coming. An AP that stops (an INIT it or another
 * CPU sent, a garbage MSI or redirection entry) is started again with
 * INIT + SIPI by whichever CPU holds the monitor lease; one that does not
 * come back within 6 s is a failure. The BSP is never sent INIT, which
 * would reset the machine. Self-destruction govmm cannot help
 * is avoided: no write to the debug-exit port, ACPI sleep control or
 * reset registers, INIT only to one physical destination, SIPI only at
 * the trampoline's vector, DMA addresses the fuzzer writes on purpose
 * point into the arena or outside RAM, garbage addresses it hands devices
 * stay out of the first MiB (its real-mode code), and the trampoline is
 * checked (counted) and repaired before every SIPI it sends (lowguard=0
 * turns both off, to measure what they prevent). The verdict on govmm
 * (no panic, deadlock, leak or unexplained stop) is the host side's:
 * tests/guestfuzz_test.go. */
#include "rt.h"

const char guest_name[] = "fuzz";

#define ARENA       0x01000000u         /* 16 MiB: garbage tables and rings */
#define ARENA_SIZE  0x00400000u         /* 4 MiB */
#define IRT_AREA    (ARENA)             /* remapping table, 64 KiB */
#define IQ_AREA     (ARENA + 0x10000)   /* invalidation queue, 64 KiB */
#define CPU_AREA    (ARENA + 0x20000)   /* per-CPU rings and buffers */
#define CPU_AREA_SZ 0x20000u            /* 128 KiB each */
#define REAL_IRET   0x7F00              /* real mode: IRET, for the IVT */
#define SMM_ENTRY   0x38000             /* SMBASE (0x30000 from reset) + 0x8000 */
#define MAXC        16                  /* fuzzing CPUs (APIC IDs 0..15) */
#define MAXENT      64
#define MAXFN       8

/* ---- the exit bus map (exitbus.EncodeMap) ---- */
enum { SP_PIO, SP_MMIO, SP_MSR };
struct ent {
	u32 space, flags;
	u64 base, end;
	char name[40];
};
static struct ent map[MAXENT];
static int nmap;
static int by_space[3][MAXENT], nby[3];

static int has_prefix(const char *s, const char *p)
{
	while (*p && *s == *p)
		s++, p++;
	return !*p;
}

static struct ent *find(const char *name)
{
	for (int i = 0; i < nmap; i++)
		if (has_prefix(map[i].name, name))
			return &map[i];
	return 0;
}

static u32 be32(const u8 *p) { return (u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

static void read_map(void)
{
	u8 cnt[4], e[64];

	fw_cfg_read(0x19, cnt, 4);
	u32 n = be32(cnt);
	for (u32 i = 0; i < n; i++) {
		/* The directory is one item: re-select and skip to entry i. */
		outw(0x510, 0x19);
		for (u32 k = 0; k < 4 + 64 * i; k++)
			inb(0x511);
		for (int k = 0; k < 64; k++)
			e[k] = inb(0x511);
		if (!streq((const char *)e + 8, "etc/govmm/busmap"))
			continue;
		u32 size = be32(e);
		u16 key = (u16)(e[4] << 8 | e[5]);
		nmap = size / 64 < MAXENT ? size / 64 : MAXENT;
		fw_cfg_read(key, map, nmap * 64);
		break;
	}
	if (!nmap)
		die("busmap", "no fw_cfg file etc/govmm/busmap");
	for (int i = 0; i < nmap; i++) {
		map[i].name[39] = 0;
		if (map[i].space <= SP_MSR)
			by_space[map[i].space][nby[map[i].space]++] = i;
	}
}

/* ---- PCI functions found at start ---- */
struct fn {
	u32 cfg;                            /* ECAM address of its config space */
	u32 bar[6], barsz[6];
	u32 msix_cap, msix_n, msix_bar, msix_off;
	u32 common_bar, common_off, notify_bar, notify_off, notify_mult;
};
static struct fn fns[MAXFN];
static int nfns;
static u32 ecam, ecam_len;

/* ---- per CPU, by APIC ID (a restarted CPU gets a new stack) ---- */
enum { K_MMIO, K_STRMMIO, K_PIO, K_STRPIO, K_MSR, K_ICR, K_APICMODE, K_TIMER, K_PCICFG, K_BAR, K_MSIX,
       K_VIRTIO, K_IOMMU, K_GARBAGE, K_MSITEST, K_LINE, K_PVIPI, K_WINDOW, NKINDS };
static const char *kind_name[NKINDS] = {"mmio", "mmio-string", "pio", "pio-string", "msr", "icr", "apic-mode",
	"apic-timer", "pci-config", "bar", "msix-table", "virtqueue", "remapping", "arena", "msi", "line", "pv-ipi", "irq-window"};

struct cpu {
	u64 rng;
	volatile u32 ops, traps, irqs, nmis, started;
	u32 kind[NKINDS];
	u32 apic_base;                      /* its xAPIC page as far as it knows */
	int x2;
	/* Its xAPIC ID as it last set or read it: the register is writable
	 * (under KVM too), INIT keeps it, and a CPU stopped with an ID of its
	 * own choosing does not hear an INIT to its initial one (restart). */
	volatile u32 xid;
	/* Its APIC is hardware-disabled, or a write to disable it is under
	 * way: set before the WRMSR (an INIT may land right after it), read
	 * back by apic_learn. An AP stopped so is beyond INIT and SIPI. */
	volatile u32 apic_off;
	volatile int jb_ok;
	void *jb[5];
	/* monitor's view of it */
	u32 last_ops, last_started, stale;
};
static struct cpu cpu[MAXC];
static volatile u8 slot_of[MAX_CPUS];  /* stack index -> APIC ID */
static u32 seed, secs, x2avail, total_restarts;
static u64 tsc_hz, t_start;
static u32 tsc_khz;
static volatile u32 mon_owner, quiesce, parked;
static volatile u64 mon_next, mon_taken;
static u32 ro_sum;
extern u64 idt[256];
extern char __image_start[], __ro_end[], tramp_start[], tramp_end[];

static struct cpu *me(void) { return &cpu[slot_of[this_cpu()]]; }

static u64 rnd(struct cpu *c)
{
	u64 x = c->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}
static u32 r32(struct cpu *c) { return (u32)(rnd(c) >> 32); }
static u32 below(struct cpu *c, u32 n) { return n ? r32(c) % n : 0; }
static int one_in(struct cpu *c, u32 n) { return below(c, n) == 0; }

static u32 value_raw(struct cpu *c);
/* lowguard=0: neither keep garbage addresses out of the first MiB nor
 * repair the trampoline before a SIPI (how often it was overwritten is
 * still counted and reported): the fuzz as it was before both, to measure
 * what they prevent. */
static u32 low_guard = 1;
static u32 init_on = 1;                  /* init=0: no INIT or SIPI anywhere */
static u32 smi_on = 0;                   /* smi=1: SMIs too */

/* Whether delivery mode dm may be sent: INIT and StartUp unless init=0,
 * SMI only with smi=1. */
static int mode_on(u32 dm) { return dm == 2 ? smi_on : dm == 5 || dm == 6 ? init_on : 1; }

/* No value the fuzz writes carries a delivery mode it leaves out where an
 * ICR, MSI data or redirection entry (bits 10:8) or an IRTE (bits 7:5) has
 * it: INIT (5) becomes 1, StartUp (6) becomes 2 and SMI (2) becomes 0. */
static u32 sane_modes(u32 v)
{
	for (int sh = 8; sh >= 5; sh -= 3) {
		u32 dm = v >> sh & 7;
		if (!mode_on(dm))
			v ^= (dm == 2 ? 2u : 4u) << sh;
		if (!mode_on(v >> sh & 7))      /* StartUp became SMI */
			v ^= 2u << sh;
	}
	return v;
}

/* Boundary values first, then anything. */
static u32 value(struct cpu *c) { return sane_modes(value_raw(c)); }

static u32 value_raw(struct cpu *c)
{
	switch (below(c, 10)) {
	case 0: return 0;
	case 1: return ~0u;
	case 2: return 1u << below(c, 32);
	case 3: return ~(1u << below(c, 32));
	case 4: return below(c, 256);
	case 5: return 0x80000000u;
	case 6: return below(c, 0x10000);
	default: return r32(c);
	}
}

/* An offset into a range of len bytes: its edges, register-aligned
 * offsets in its first pages, and anywhere. */
static u32 offset_in(struct cpu *c, u32 len)
{
	switch (below(c, 8)) {
	case 0: return 0;
	case 1: return len - 1;
	case 2: return len >= 4 ? len - 4 : 0;
	case 3: return below(c, len < 0x1000 ? len : 0x1000) & ~15u;
	case 4: return below(c, len < 0x1000 ? len : 0x1000) & ~3u;
	case 5: return below(c, len < 0x40000 ? len : 0x40000);
	case 6: return below(c, len < 0x100 ? len : 0x100);
	default: return below(c, len);
	}
}

/* A DMA address the fuzzer hands a device: in the arena, at RAM's edge or
 * outside RAM, never in the guest's own image. */
static u64 dma_addr(struct cpu *c, u32 area, u32 len)
{
	switch (below(c, 8)) {
	case 0: return 0x07FFF000u + below(c, 0x2000);    /* the top of 128 MiB */
	case 1: return (u64)r32(c) << 32 | r32(c);        /* anywhere: mostly outside RAM */
	case 2: return 0xFEE00000u + below(c, 0x1000);    /* the APIC page */
	case 3: return ARENA + below(c, ARENA_SIZE);      /* anywhere in the arena, unaligned */
	default: return area + (below(c, len) & ~15u);
	}
}

/* A garbage address the fuzz hands a device (a wait descriptor's status
 * address, a descriptor's buffer, a PV EOI word), kept out of the first
 * MiB: the guest's real-mode code (trampoline, IVT, the jump on every
 * page) lives there, and a device writing into it while a CPU starts on
 * it makes that CPU mis-execute it. Such an address moves into the arena. */
static u32 not_low(u32 a) { return low_guard && a < 0x100000u ? a + ARENA : a; }

static void icr_send(struct cpu *c, u32 lo, u32 dest);

/* One MMIO access. A write that reaches the ICR of this CPU's own xAPIC
 * page (wherever it has moved the page, whatever range it aimed at)
 * becomes an ICR write made sane (icr_sane). */
static u32 mmio_rw(struct cpu *c, u32 addr, int size, int write, u32 v)
{
	if (write && c && (addr & ~0xFFFu) == c->apic_base && !c->x2 &&
	    (addr & 0xFFF) + size > APIC_ICR && (addr & 0xFFF) < APIC_ICR + 4) {
		icr_send(c, v, v >> 8);
		return 0;
	}
	if (write && c && !c->x2 && addr == c->apic_base + APIC_ID && size == 4)
		c->xid = v >> 24;               /* before the store, which may fault */
	switch (size) {
	case 1:
		if (write)
			*(volatile u8 *)addr = v;
		else
			v = *(volatile u8 *)addr;
		break;
	case 2:
		if (write)
			*(volatile u16 *)addr = v;
		else
			v = *(volatile u16 *)addr;
		break;
	default:
		if (write)
			*(volatile u32 *)addr = v;
		else
			v = *(volatile u32 *)addr;
	}
	return v;
}

static u32 pio_rw(u16 port, int size, int write, u32 v)
{
	switch (size) {
	case 1:
		if (write)
			outb(port, v);
		else
			v = inb(port);
		break;
	case 2:
		if (write)
			outw(port, v);
		else
			asm volatile("inw %1, %w0" : "=a"(v) : "Nd"(port));
		break;
	default:
		if (write)
			outl(port, v);
		else
			v = inl(port);
	}
	return v;
}

/* ---- the local APIC, in whatever mode this CPU left it ---- */
static int is_broadcast(struct cpu *c, u32 dest) { return c->x2 ? dest == ~0u : (dest & 0xFF) == 0xFF; }

/* What the fuzzer lets itself send: INIT to one physical destination
 * only (never a shorthand or broadcast that could stop every CPU at
 * once), and never to the BSP (APIC ID 0): INIT restarts a BSP at the
 * reset vector, a machine reset (SDM 9.4; KVM makes it runnable there,
 * ignoring SIPIs, and govmm ends the VM), not a stop a SIPI undoes; SIPI
 * only at the trampoline. */
static volatile u32 booting;            /* CPUs between INIT and fuzz_cpu, by APIC ID */

static void icr_sane(struct cpu *c, u32 *lo, u32 *dest)
{
	u32 dm = *lo >> 8 & 7;
	if (!mode_on(dm)) {
		*lo &= ~0x700u;
		dm = 0;
	}
	/* An NMI while a CPU runs its trampoline, between setting CR0.PE and
	 * loading the protected-mode IDT, goes through the real-mode IVT read
	 * as gates: a triple fault. An OS sends no NMI to a booting CPU. */
	if (dm == 4 && booting && (*lo >> 18 & 3) != 1)
		*lo &= ~0x700u;
	if (dm == 5) {
		*lo &= ~(3u << 18 | ICR_LOGICAL);
		if (is_broadcast(c, *dest) || (c->x2 ? *dest : *dest & 0xFF) == 0)
			*dest = ncpus > 1 ? 1 + below(c, ncpus - 1) : 1;
	}
	if (dm == 6)
		*lo = (*lo & ~0xFFu) | TRAMPOLINE >> 12;
}

/* What a SIPI starts a CPU on must be intact when the CPU runs it: the
 * trampoline at TRAMPOLINE (in real mode) and the GDT its far jump loads
 * CS from (gdt in entry.S, above 1 MiB; the VT-x fuzz's seed 1004 stopped
 * at that jump). Garbage DMA (a wait descriptor's status address, a
 * descriptor's buffer, anything a garbled table points at) may have
 * written into either since it was last repaired, and a CPU started on
 * such bytes mis-executes them. Each is compared with its good bytes
 * (the image's copy of the trampoline, the GDT as it was at start) and
 * repaired before every SIPI; the monitor repairs the trampoline too.
 * Counted: how often each was found overwritten by the monitor, and just
 * before a SIPI. */
struct guarded {
	const char *name;
	volatile u8 *at;
	const u8 *good;
	u32 n;
	volatile u32 hits, hits_sipi, hits_start;
};
extern char gdt[], gdt_end[];
static u8 gdt_good[64];
static struct guarded tramp = {.name = "trampoline"}, gdt_region = {.name = "GDT"};

static void guard_init(void)
{
	tramp.at = (volatile u8 *)TRAMPOLINE;
	tramp.good = (const u8 *)tramp_start;
	tramp.n = tramp_end - tramp_start;
	gdt_region.n = gdt_end - gdt;
	if (gdt_region.n > sizeof gdt_good)
		die("gdt", "GDT of %u bytes, room for %u", gdt_region.n, (u32)sizeof gdt_good);
	memcpy(gdt_good, gdt, gdt_region.n);
	gdt_region.at = (volatile u8 *)gdt;
	gdt_region.good = gdt_good;
}

enum { BY_MONITOR, BEFORE_SIPI, WHILE_STARTING };

static void guard(struct guarded *g, int when)
{
	u32 i = 0;
	while (i < g->n && g->at[i] == g->good[i])
		i++;
	if (i == g->n)
		return;
	__atomic_add_fetch(when == BEFORE_SIPI ? &g->hits_sipi : when == WHILE_STARTING ? &g->hits_start : &g->hits, 1,
			   __ATOMIC_RELAXED);
	if (when == BEFORE_SIPI)        /* printed; while a CPU starts it can be often: counted only */
		printf("# %s overwritten before a SIPI: byte %u is 0x%02x, not 0x%02x%s\n", g->name, i,
		       g->at[i], g->good[i], low_guard ? " (repaired)" : " (left as it is: lowguard=0)");
	if (low_guard || when != BEFORE_SIPI)   /* the monitor always repairs, guard_start only with lowguard */
		memcpy((void *)g->at, g->good, g->n);
}

/* After a SIPI, until the started CPU is past its trampoline and GDT
 * (fuzz_cpu clears its booting bit), a tenth of a second at most: the
 * other CPUs' garbage (a device one of them programmed, its own store)
 * may land on either meanwhile, and a CPU that executes it triple-faults,
 * ending the seed early (the VT-x host's seeds 1001-1004: govmm's message
 * showed the bytes at the SIPI page overwritten). Repaired at once and
 * counted, not printed. */
static void guard_start(u32 dest)
{
	if (!low_guard || dest >= 32)
		return;
	u64 end = rdtsc() + tsc_hz / 10;
	while ((booting & 1u << dest) && rdtsc() < end) {
		guard(&tramp, WHILE_STARTING);
		guard(&gdt_region, WHILE_STARTING);
		pause();
	}
}

static void icr_write(struct cpu *c, u32 lo, u32 dest)
{
	if ((lo >> 8 & 7) == 6) {
		guard(&tramp, BEFORE_SIPI);
		guard(&gdt_region, BEFORE_SIPI);
	}
	if (c->x2) {
		wrmsr(0x830, (u64)dest << 32 | lo);
	} else {
		*(volatile u32 *)(c->apic_base + APIC_ICR2) = dest << 24;
		*(volatile u32 *)(c->apic_base + APIC_ICR) = lo;  /* mmio_rw's check ends here */
	}
	if ((lo >> 8 & 7) == 6)
		guard_start(dest);
}

/* An ICR write made sane; an INIT is followed by its SIPI, as an OS
 * sends them, so that a CPU is parked for a moment only. */
static void icr_send(struct cpu *c, u32 lo, u32 dest)
{
	icr_sane(c, &lo, &dest);
	if ((lo >> 8 & 7) == 5 && dest < 32)
		__atomic_or_fetch(&booting, 1u << dest, __ATOMIC_SEQ_CST);
	icr_write(c, lo, dest);
	if ((lo >> 8 & 7) == 5)
		icr_write(c, 0x0600 | TRAMPOLINE >> 12, dest);
}

static void apic_learn(struct cpu *c)
{
	u64 b = rdmsr(0x1B);
	c->apic_base = (u32)b & 0xFFFFF000u;
	c->x2 = (b & 0xC00) == 0xC00;
	c->apic_off = !(b & 0x800);
	/* x2APIC, and every way into xAPIC, set the ID back to the initial
	 * one; a CPU that stayed in xAPIC keeps the one it wrote. */
	if ((b & 0xC00) == 0x800)
		c->xid = *(volatile u32 *)(c->apic_base + APIC_ID) >> 24;
	else
		c->xid = c - cpu;
}

/* Every write of this CPU's IA32_APIC_BASE: one that disables the APIC
 * marks it first (apic_off). If the write faults, the loop's trap path
 * reads the MSR back. */
static void base_write(struct cpu *c, u64 v)
{
	if (!(v & 0x800))
		c->apic_off = 1;
	wrmsr(0x1B, v);
}

/* Through disabled to xAPIC at the reset base, BSP flag kept; returns
 * that flag. */
static u64 to_xapic(struct cpu *c)
{
	u64 bsp = rdmsr(0x1B) & 0x100;
	base_write(c, bsp | 0xFEE00000u);
	base_write(c, bsp | 0xFEE00000u | 0x800);
	apic_learn(c);
	return bsp;
}

/* The APIC back to a state the monitor can send with: disable, xAPIC at
 * the reset base, x2APIC if there is one, software enabled. */
static void apic_sane(struct cpu *c)
{
	u64 bsp = to_xapic(c);
	if (x2avail) {
		base_write(c, bsp | 0xFEE00000u | 0xC00);
		apic_learn(c);
	}
	if (c->x2)
		wrmsr(0x80F, 0x1FF);
	else
		*(volatile u32 *)(c->apic_base + APIC_SVR) = 0x1FF;
}

static int is_apic_page(struct ent *e) { return e->flags & 2; }

/* ---- the operations ---- */
static void op_mmio(struct cpu *c)
{
	if (!nby[SP_MMIO])
		return;
	struct ent *e = &map[by_space[SP_MMIO][below(c, nby[SP_MMIO])]];
	u32 base = (u32)e->base, len = (u32)(e->end - e->base + 1);
	if (is_apic_page(e) && one_in(c, 2))
		base = c->apic_base;
	u32 addr = base + offset_in(c, len);
	mmio_rw(c, addr, 1 << below(c, 3), one_in(c, 2), value(c));
}

/* MOVS between the arena and MMIO: the emulator's string path. */
static void op_strmmio(struct cpu *c)
{
	if (!nby[SP_MMIO])
		return;
	struct ent *e = &map[by_space[SP_MMIO][below(c, nby[SP_MMIO])]];
	u32 len = (u32)(e->end - e->base + 1);
	u32 mmio = (u32)e->base + offset_in(c, len), ram = CPU_AREA + (c - cpu) * CPU_AREA_SZ + 0x1F000;
	if (is_apic_page(e) || ((mmio & ~0xFFFu) == c->apic_base) || (((mmio + 32) & ~0xFFFu) == c->apic_base))
		return;                         /* would reach the ICR unchecked */
	u32 n = 1 + below(c, 8), src = mmio, dst = ram;
	if (one_in(c, 2))
		src = ram, dst = mmio;
	if (one_in(c, 2))
		asm volatile("rep movsb" : "+S"(src), "+D"(dst), "+c"(n) :: "memory");
	else
		asm volatile("rep movsl" : "+S"(src), "+D"(dst), "+c"(n) :: "memory");
}

/* Ports the guest must not write: they end or reset the VM. */
static int port_forbidden(u32 port)
{
	return (port >= 0xF4 && port <= 0xF7) || port == 0xCF9 || port == 0x64 || port == 0x92 ||
	       (port >= 0x604 && port <= 0x605);
}

static void op_pio(struct cpu *c)
{
	u32 port;
	if (one_in(c, 8) || !nby[SP_PIO]) {
		port = below(c, 0x10000);
	} else {
		struct ent *e = &map[by_space[SP_PIO][below(c, nby[SP_PIO])]];
		port = (u32)e->base + offset_in(c, (u32)(e->end - e->base + 1));
	}
	int size = 1 << below(c, 3), write = one_in(c, 2);
	if (write && (port_forbidden(port) || port_forbidden(port + size - 1)))
		return;
	if (write && port >= 0x3F8 && port <= 0x3FF && !one_in(c, 8))
		return;                         /* the monitor still needs the console */
	pio_rw(port & 0xFFFF, size, write, value(c));
}

static void op_strpio(struct cpu *c)
{
	if (!nby[SP_PIO])
		return;
	struct ent *e = &map[by_space[SP_PIO][below(c, nby[SP_PIO])]];
	u32 port = (u32)e->base + offset_in(c, (u32)(e->end - e->base + 1));
	u32 buf = CPU_AREA + (c - cpu) * CPU_AREA_SZ + 0x1E000, n = 1 + below(c, 8);
	if (port_forbidden(port) || (port >= 0x3F8 && port <= 0x3FF))
		return;
	if (one_in(c, 2))
		asm volatile("rep insb" : "+D"(buf), "+c"(n) : "d"(port) : "memory");
	else
		asm volatile("rep outsb" : "+S"(buf), "+c"(n) : "d"(port) : "memory");
}

/* Random indices KVM itself serves are left alone: writing them changes
 * the guest's own machine (TSC, EFER, kvmclock writing into RAM), not
 * govmm. Indices that reach user space are fair game. */
static int msr_kvm_owns(u32 idx)
{
	return idx < 0x2000 || (idx >= 0xC0000000u && idx < 0xC0020000u) ||
	       (idx >= 0x40000000u && idx < 0x40000200u) || (idx >= 0x4B564D00u && idx < 0x4B564E00u);
}

static void op_msr(struct cpu *c)
{
	u32 idx;
	int write = one_in(c, 2);
	u64 v = (u64)value(c) << 32 | value(c);

	switch (below(c, 5)) {
	case 0:
	case 1:
		idx = 0x800 + below(c, 0x100);
		break;
	case 2: {
		if (!nby[SP_MSR])
			return;
		struct ent *e = &map[by_space[SP_MSR][below(c, nby[SP_MSR])]];
		idx = (u32)e->base + below(c, (u32)(e->end - e->base + 1));
		break;
	}
	case 3:
		idx = 0x4D564F00u + below(c, 0x100);
		break;
	default:
		idx = r32(c);
		if (write && msr_kvm_owns(idx))
			write = 0;
	}
	if (!write) {
		rdmsr(idx);
		return;
	}
	switch (idx) {
	case 0x830:
		icr_send(c, (u32)v, (u32)(v >> 32));
		return;
	case 0x1B:
		return;                         /* op_apicmode's */
	case 0x4B564D04u:                       /* PV EOI: KVM-style GPA | enable */
		v = one_in(c, 4) ? (v & ~0xFFFFFFFFull) | not_low((u32)v)
				 : (dma_addr(c, CPU_AREA + (c - cpu) * CPU_AREA_SZ + 0x1D000, 0x1000) & ~3ull) | 1;
		break;
	case 0x6E0:                             /* TSC deadline: soon, now, past, far */
		v = one_in(c, 2) ? rdtsc() + below(c, 2000000) : v;
		break;
	}
	wrmsr(idx, v);
}

static void op_icr(struct cpu *c)
{
	static const u8 modes[] = {0, 0, 0, 0, 1, 2, 3, 4, 4, 5, 6, 7};
	u32 lo = value(c) & 0xFF;
	if (one_in(c, 2))
		lo = 32 + below(c, 224);
	lo |= (u32)modes[below(c, sizeof modes)] << 8;
	lo |= below(c, 2) << 11 | below(c, 2) << 14 | below(c, 2) << 15 | below(c, 4) << 18;
	u32 dest;
	switch (below(c, 4)) {
	case 0: dest = below(c, ncpus); break;
	case 1: dest = c->x2 ? ~0u : 0xFF; break;
	case 2: dest = 1u << below(c, c->x2 ? 32 : 8); break;
	default: dest = value(c);
	}
	icr_send(c, lo, dest);
}

static void op_apicmode(struct cpu *c)
{
	u64 b = rdmsr(0x1B), bsp = b & 0x100;
	static const u32 bases[] = {0xFEE00000u, 0xFEE10000u, 0xFEC00000u, 0xFED90000u, 0xF0000000u, ARENA + 0x3F0000};
	switch (below(c, 8)) {
	case 0:
		base_write(c, b & ~0xC00ull);                   /* disable */
		break;
	case 1:
		base_write(c, bsp | c->apic_base | 0x800);      /* xAPIC (from disabled) */
		break;
	case 2:
		base_write(c, b | 0xC00);                       /* x2APIC (from xAPIC) */
		break;
	case 3:                                             /* relocate */
		base_write(c, bsp | 0x800 | bases[below(c, sizeof bases / 4)]);
		break;
	case 4:                                             /* mostly #GP */
		/* The BSP flag (bit 8) kept as it is: set on an AP, the next
		 * INIT to it would be a machine reset (KVM: kvm_vcpu_is_bsp
		 * reads the flag), which ended seeds early. */
		base_write(c, (((u64)value(c) << 32 | value(c)) & ~0x100ull) | bsp);
		break;
	case 5:
		apic_sane(c);
		break;
	default: {                                          /* SVR: soft enable/disable */
		u32 svr = value(c) & 0x11FF;
		if (c->x2)
			wrmsr(0x80F, svr);
		else
			*(volatile u32 *)(c->apic_base + APIC_SVR) = svr;
	}
	}
	apic_learn(c);
}

static void apic_reg(struct cpu *c, u32 reg, u32 v)
{
	if (c->x2)
		wrmsr(0x800 + (reg >> 4), v);
	else
		*(volatile u32 *)(c->apic_base + reg) = v;
}

static void op_timer(struct cpu *c)
{
	apic_reg(c, APIC_TDCR, below(c, 16));
	apic_reg(c, APIC_LVTT, (32 + below(c, 224)) | below(c, 4) << 17 | (one_in(c, 4) ? 0x10000 : 0));
	apic_reg(c, APIC_TMICT, one_in(c, 4) ? value(c) : below(c, 100000));
}

/* ---- PCI ---- */
static u32 cfg_read(u32 cfg, u32 off, int size) { return mmio_rw(0, cfg + off, size, 0, 0); }
static void cfg_write(u32 cfg, u32 off, int size, u32 v) { mmio_rw(0, cfg + off, size, 1, v); }

static void op_pcicfg(struct cpu *c)
{
	u32 dev = one_in(c, 2) ? below(c, nfns + 2) : below(c, 32), fn = one_in(c, 4) ? below(c, 8) : 0;
	u32 reg = one_in(c, 2) ? below(c, 0x100) : below(c, 0x1000);
	int size = 1 << below(c, 3), write = one_in(c, 2);
	if (one_in(c, 3) || !ecam) {                        /* mechanism #1 */
		outl(0xCF8, 0x80000000u | (one_in(c, 8) ? below(c, 256) : 0) << 16 | dev << 11 | fn << 8 | (reg & 0xFC));
		pio_rw(0xCFC + (reg & 3), size, write, value(c));
		return;
	}
	mmio_rw(c, ecam + (dev << 15 | fn << 12 | reg), size, write, value(c));
}

static u32 bar_now(struct fn *f, int i)
{
	u32 lo = cfg_read(f->cfg, 0x10 + 4 * i, 4);
	return lo & 1 ? lo & ~3u : lo & ~15u;
}

static void op_bar(struct cpu *c)
{
	if (!nfns)
		return;
	struct fn *f = &fns[below(c, nfns)];
	int i = below(c, 6);
	if (!f->barsz[i])
		return;
	u32 base = bar_now(f, i), off = offset_in(c, f->barsz[i]);
	int size = 1 << below(c, 3), write = one_in(c, 2);
	if (cfg_read(f->cfg, 0x10 + 4 * i, 4) & 1)
		pio_rw((base + off) & 0xFFFF, size, write, value(c));
	else
		mmio_rw(c, base + off, size, write, value(c));
}

/* An MSI address and data, in compatibility or remappable format. */
static void msi_message(struct cpu *c, u32 *addr, u32 *data)
{
	u32 a = 0xFEE00000u;
	if (one_in(c, 2)) {                                 /* remappable: handle, SHV */
		u32 h = below(c, one_in(c, 2) ? 16 : 0x10000);
		a |= (h & 0x7FFF) << 5 | (h >> 15) << 2 | 1u << 4 | below(c, 2) << 3;
	} else {
		a |= below(c, ncpus + 1) << 12 | below(c, 2) << 2 | below(c, 2) << 3;
	}
	if (one_in(c, 8))
		a = value(c);
	static const u8 modes[] = {0, 0, 0, 1, 4, 2, 3, 7};
	*addr = a;
	*data = (one_in(c, 4) ? below(c, 256) : 32 + below(c, 224)) | (u32)modes[below(c, sizeof modes)] << 8 |
		below(c, 2) << 14 | below(c, 2) << 15;
	if (one_in(c, 8))
		*data = value(c);
	u32 dm = *data >> 8 & 7;
	if (dm == 5 || dm == 6 || !mode_on(dm) || (dm == 4 && booting))
		*data &= ~0x700u;               /* no INIT or SIPI from devices, no NMI to a booting CPU */
}

static void op_msix(struct cpu *c)
{
	if (!nfns)
		return;
	struct fn *f = &fns[below(c, nfns)];
	if (!f->msix_cap)
		return;
	if (one_in(c, 4)) {                                 /* message control: enable, function mask */
		cfg_write(f->cfg, f->msix_cap + 2, 2, 0x8000 | (one_in(c, 4) ? 0x4000 : 0));
		return;
	}
	u32 ent = below(c, f->msix_n + 2), table = bar_now(f, f->msix_bar) + f->msix_off + 16 * ent;
	u32 addr, data;
	msi_message(c, &addr, &data);
	switch (below(c, 5)) {
	case 0: mmio_rw(c, table, 4, 1, addr); break;
	case 1: mmio_rw(c, table + 4, 4, 1, one_in(c, 4) ? value(c) : 0); break;
	case 2: mmio_rw(c, table + 8, 4, 1, data); break;
	case 3: mmio_rw(c, table + 12, 4, 1, below(c, 2)); break;  /* vector control: mask */
	default: mmio_rw(c, table + below(c, 16), 1 << below(c, 3), 0, 0);
	}
}

/* A virtqueue set up by the book with rings in this CPU's arena area,
 * then a chain in it that is half plausible (a block request: header,
 * data, status) and half garbage, then a notify. */
static void op_virtio(struct cpu *c)
{
	if (!nfns)
		return;
	struct fn *f = &fns[below(c, nfns)];
	if (!f->common_off && !f->common_bar)
		return;
	u32 cc = bar_now(f, f->common_bar) + f->common_off;
	u32 area = CPU_AREA + (c - cpu) * CPU_AREA_SZ;
	u32 q = one_in(c, 8) ? value(c) & 0xFFFF : below(c, 4);
	static const u16 sizes[] = {8, 8, 16, 64, 256, 0, 1, 3, 32768, 65535};
	u16 qsz = sizes[below(c, sizeof sizes / 2)];
	if (one_in(c, 8))
		mmio_rw(c, cc + 0x14, 1, 1, 0);                        /* reset */
	mmio_rw(c, cc + 0x14, 1, 1, 1 | 2);                            /* ACKNOWLEDGE | DRIVER */
	mmio_rw(c, cc + 0x08, 4, 1, 1);                                /* driver features 32..63 */
	mmio_rw(c, cc + 0x0C, 4, 1, one_in(c, 4) ? value(c) : 1);      /* VERSION_1 */
	mmio_rw(c, cc + 0x08, 4, 1, 0);
	mmio_rw(c, cc + 0x0C, 4, 1, value(c));                         /* indirect, event idx, ... */
	mmio_rw(c, cc + 0x14, 1, 1, 1 | 2 | 8);                        /* FEATURES_OK */
	mmio_rw(c, cc + 0x16, 2, 1, q);
	mmio_rw(c, cc + 0x18, 2, 1, qsz);
	mmio_rw(c, cc + 0x1A, 2, 1, below(c, 6));                      /* its MSI-X vector */
	u32 desc = area, avail = area + 0x4000, used = area + 0x8000;
	if (one_in(c, 8)) {
		u64 d = dma_addr(c, area, 0x10000);
		desc = (u32)d;
	}
	mmio_rw(c, cc + 0x20, 4, 1, desc);
	mmio_rw(c, cc + 0x24, 4, 1, 0);
	mmio_rw(c, cc + 0x28, 4, 1, avail);
	mmio_rw(c, cc + 0x2C, 4, 1, 0);
	mmio_rw(c, cc + 0x30, 4, 1, used);
	mmio_rw(c, cc + 0x34, 4, 1, 0);
	mmio_rw(c, cc + 0x1C, 2, 1, 1);                                /* enable */
	mmio_rw(c, cc + 0x14, 1, 1, one_in(c, 8) ? value(c) : 1 | 2 | 4 | 8);

	/* The chain: descriptors 0-2 (16 bytes each: addr, len, flags, next). */
	u32 *d = (u32 *)desc;
	if (desc >= ARENA && desc + 64 <= ARENA + ARENA_SIZE) {
		u32 hdr = area + 0xC000, buf = area + 0xD000, st = area + 0xF000;
		u32 blk[] = {hdr, 16, 1 /* NEXT */ | 1 << 16, buf, 512 << below(c, 4), 1 | 2 /* WRITE */ | 2 << 16, st, 1, 2};
		d[0] = blk[0], d[1] = 0, d[2] = blk[1], d[3] = blk[2];
		d[4] = blk[3], d[5] = 0, d[6] = blk[4], d[7] = blk[5];
		d[8] = blk[6], d[9] = 0, d[10] = blk[7], d[11] = blk[8];
		u32 *h = (u32 *)hdr;
		h[0] = below(c, 10) == 0 ? value(c) : below(c, 2) ? 0 /* IN */ : one_in(c, 2) ? 4 /* FLUSH */ : 8 /* GET_ID */;
		h[2] = below(c, 64), h[3] = 0;                  /* sector */
		if (one_in(c, 3)) {                             /* one word of garbage */
			u32 w = below(c, 12);
			d[w] = w % 4 == 0 ? not_low(value(c)) : value(c);
		}
		if (one_in(c, 8)) {                             /* a loop, or indirect */
			d[3] = 1;                       /* NEXT, to itself */
			d[7] |= 4;                      /* INDIRECT */
		}
	}
	if (avail >= ARENA && avail < ARENA + ARENA_SIZE) {
		u16 *a = (u16 *)avail;
		u16 idx = a[1];
		a[2 + (idx & (qsz ? qsz - 1 : 0) & 255)] = one_in(c, 8) ? value(c) : 0;
		a[1] = idx + (one_in(c, 8) ? value(c) : 1);
		a[0] = below(c, 2);                             /* NO_INTERRUPT */
	}
	u32 nbase = bar_now(f, f->notify_bar) + f->notify_off;
	u32 noff = mmio_rw(c, cc + 0x1E, 2, 0, 0) * f->notify_mult;
	mmio_rw(c, nbase + (one_in(c, 8) ? below(c, 0x100) : noff), one_in(c, 4) ? 4 : 2, 1, q);
}

/* VT-d: the remapping table and the invalidation queue in the arena,
 * enabled and disabled, queues filled with descriptors of every type. */
static void op_iommu(struct cpu *c)
{
	struct ent *e = find("VT-d");
	if (!e)
		return;
	u32 r = (u32)e->base;
	switch (below(c, 9)) {
	case 0:                                                     /* IRTA: table, EIME, size */
		mmio_rw(c, r + 0xB8, 4, 1, (one_in(c, 8) ? (u32)dma_addr(c, IRT_AREA, 0x10000) & ~0xFFFu : IRT_AREA) |
			below(c, 2) << 11 | below(c, 16));
		mmio_rw(c, r + 0xBC, 4, 1, 0);
		mmio_rw(c, r + 0x18, 4, 1, 1u << 24);                  /* SIRTP */
		break;
	case 1:                                                     /* GCMD: IRE, CFI, QIE, anything */
		mmio_rw(c, r + 0x18, 4, 1, one_in(c, 4) ? value(c) : (below(c, 2) << 25 | below(c, 2) << 23 | below(c, 2) << 26));
		break;
	case 2:                                                     /* IQA, then QIE */
		mmio_rw(c, r + 0x90, 4, 1, (one_in(c, 8) ? (u32)dma_addr(c, IQ_AREA, 0x10000) & ~0xFFFu : IQ_AREA) | below(c, 8));
		mmio_rw(c, r + 0x94, 4, 1, 0);
		mmio_rw(c, r + 0x18, 4, 1, 1u << 26 | 1u << 25);
		break;
	case 3: {                                                   /* descriptors at the tail, then IQT */
		u32 *iq = (u32 *)IQ_AREA;
		u32 t = below(c, 256);
		static const u8 types[] = {1, 2, 4, 5, 7, 3, 0};
		iq[4 * t] = types[below(c, sizeof types)] | (one_in(c, 4) ? value(c) & ~0xFu : 0);
		iq[4 * t + 1] = value(c);
		iq[4 * t + 2] = one_in(c, 2) ? (u32)dma_addr(c, IQ_AREA + 0x8000, 0x1000) : not_low(value(c));  /* wait status addr */
		iq[4 * t + 3] = 0;
		mmio_rw(c, r + 0x88, 4, 1, (t + 1) << 4 | (one_in(c, 8) ? below(c, 16) : 0));
		mmio_rw(c, r + 0x8C, 4, 1, 0);
		break;
	}
	case 4: {                                                   /* an IRTE */
		u32 *irt = (u32 *)IRT_AREA;
		u32 i = below(c, 16);
		irt[4 * i] = 1 | below(c, 2) << 1 | below(c, 2) << 2 | below(c, 8) << 5 | (32 + below(c, 224)) << 16;
		irt[4 * i + 1] = one_in(c, 2) ? below(c, ncpus) << 8 : value(c);
		irt[4 * i + 2] = below(c, 0x10000) | below(c, 4) << 18;  /* SID, SQ, SVT */
		irt[4 * i + 3] = one_in(c, 8) ? value(c) : 0;
		if (one_in(c, 4))
			irt[4 * i + below(c, 4)] = value(c);
		u32 dlm = irt[4 * i] >> 5 & 7;
		if (dlm == 5 || dlm == 6 || (dlm == 4 && booting))
			irt[4 * i] &= ~(7u << 5);       /* no INIT or SIPI from devices, no NMI to a booting CPU */
		break;
	}
	case 5:                                                     /* faults: read, clear */
		mmio_rw(c, r + 0x220 + 16 * below(c, 4) + 12, 4, one_in(c, 2), 1u << 31);
		mmio_rw(c, r + 0x34, 4, 1, value(c));
		break;
	default:
		mmio_rw(c, r + (offset_in(c, 0x1000) & ~3u), 4, one_in(c, 2), value(c));
	}
}

/* Garbage where the devices and the remapping unit look. */
static void op_garbage(struct cpu *c)
{
	u32 *a = (u32 *)(ARENA + (below(c, ARENA_SIZE) & ~3u));
	if (one_in(c, 2))
		a = (u32 *)(CPU_AREA + (c - cpu) * CPU_AREA_SZ + (below(c, 0x10000) & ~3u));
	*a = value(c);
}

static void op_msitest(struct cpu *c)
{
	u32 addr, data;
	msi_message(c, &addr, &data);
	outl(0x2100, addr);
	outl(0x2104, one_in(c, 8) ? value(c) : 0);
	outl(0x2108, one_in(c, 2) ? below(c, 0x100) : value(c) & 0xFFFF);
	outl(0x210C, data);
	inl(0x210C);
}

static void op_line(struct cpu *c) { line(below(c, 24), below(c, 2)); }

/* govmm's PV send-IPI (package pvipi): bitmap in the arena or not. */
static void op_pvipi(struct cpu *c)
{
	u32 *bm = (u32 *)(CPU_AREA + (c - cpu) * CPU_AREA_SZ + 0x1C000);
	bm[0] = value(c), bm[1] = 0;
	u32 eax = (one_in(c, 4) ? below(c, 256) : 32 + below(c, 224)) | (one_in(c, 4) ? 4 : 0) << 8;
	if (one_in(c, 8))
		eax = value(c);
	u32 edx = one_in(c, 4) ? value(c) : 1 + below(c, 2);
	u32 esi = one_in(c, 4) ? (u32)dma_addr(c, (u32)bm, 8) : (u32)bm;
	u32 edi = one_in(c, 2) ? 0 : value(c);
	if ((eax >> 8 & 7) == 4 && booting)
		eax &= ~0x700u;                 /* no NMI to a booting CPU */
	asm volatile("wrmsr" :: "c"(0x4D564F50u), "a"(eax), "d"(edx), "S"(esi), "D"(edi) : "memory");
}

static void op_window(struct cpu *c) { asm volatile("sti; nop; nop; nop; nop; cli" ::: "memory"); }

static void (*const ops[NKINDS])(struct cpu *) = {
	[K_MMIO] = op_mmio, [K_STRMMIO] = op_strmmio, [K_PIO] = op_pio, [K_STRPIO] = op_strpio, [K_MSR] = op_msr,
	[K_ICR] = op_icr, [K_APICMODE] = op_apicmode, [K_TIMER] = op_timer, [K_PCICFG] = op_pcicfg, [K_BAR] = op_bar,
	[K_MSIX] = op_msix, [K_VIRTIO] = op_virtio, [K_IOMMU] = op_iommu, [K_GARBAGE] = op_garbage,
	[K_MSITEST] = op_msitest, [K_LINE] = op_line, [K_PVIPI] = op_pvipi, [K_WINDOW] = op_window,
};
/* Relative weights. */
static const u8 weight[NKINDS] = {
	[K_MMIO] = 20, [K_STRMMIO] = 2, [K_PIO] = 10, [K_STRPIO] = 2, [K_MSR] = 14, [K_ICR] = 6, [K_APICMODE] = 2,
	[K_TIMER] = 2, [K_PCICFG] = 8, [K_BAR] = 8, [K_MSIX] = 5, [K_VIRTIO] = 4, [K_IOMMU] = 6, [K_GARBAGE] = 8,
	[K_MSITEST] = 3, [K_LINE] = 2, [K_PVIPI] = 2, [K_WINDOW] = 4,
};
static u32 weight_sum;

static int pick(struct cpu *c)
{
	u32 w = below(c, weight_sum);
	for (int k = 0; k < NKINDS; k++) {
		if (w < weight[k])
			return k;
		w -= weight[k];
	}
	return K_MMIO;
}

/* ---- invariants and the monitor ---- */
static u32 checksum(void)
{
	u32 h = 2166136261u;
	for (const u8 *p = (const u8 *)__image_start; p < (const u8 *)__ro_end; p++)
		h = (h ^ *p) * 16777619u;
	for (const u8 *p = (const u8 *)idt; p < (const u8 *)(idt + 256); p++)
		h = (h ^ *p) * 16777619u;
	for (const u8 *p = (const u8 *)isr_table; p < (const u8 *)(isr_table + 256); p++)
		h = (h ^ *p) * 16777619u;
	return h;
}

static void serial_sane(void)
{
	outb(0x3FB, 0x03);                  /* LCR: 8N1, DLAB off */
	outb(0x3F9, 0x00);                  /* IER */
	outb(0x3FC, 0x03);                  /* MCR: no loopback */
}

/* Low memory, which garbage DMA with small addresses may hit (the image
 * is linked at 83 MiB, out of the way): the trampoline at 0x8000, and the
 * real-mode IVT, since a CPU just started by SIPI runs the trampoline in
 * real mode, where an NMI (the fuzz sends them) or an exception goes
 * through the IVT: every vector to an IRET. Rewritten by the monitor. */
static void repair_low(void)
{
	guard(&tramp, BY_MONITOR);
	*(volatile u8 *)REAL_IRET = 0xCF;
	for (int v = 2; v < 256; v++)
		((volatile u32 *)0)[v] = REAL_IRET;    /* segment 0, offset REAL_IRET */
	/* A stray SIPI (a device message or redirection entry the fuzz
	 * garbled) starts a parked CPU at page V of the first MiB: every page
	 * jumps to the trampoline (ljmp $0x800, $0). On page 0 the jump takes
	 * IVT entries 0 and 1 (#DE and #DB, which real mode here never raises). */
	static const u8 pad[] = {0xEA, 0x00, 0x00, 0x00, 0x08};
	for (u32 page = 0; page < 0x100000; page += 0x1000)
		if (page != TRAMPOLINE)
			memcpy((void *)page, pad, sizeof pad);
	/* SMM's entry (SMBASE 0x30000 + 0x8000): RSM, straight back. */
	*(volatile u16 *)SMM_ENTRY = 0xAA0F;
}

/* INIT + SIPI to a stopped CPU, physical (also with init=0), at its
 * initial APIC ID and, if it set another xAPIC ID, at that one too (an
 * x2APIC sender's destination below 256 reaches an xAPIC CPU by its
 * xAPIC ID: KVM's kvm_apic_match_physical_addr). Not at 0 or 0xFF: the
 * BSP's ID (a machine reset) and the broadcast. */
static void init_sipi(struct cpu *m, u32 dest)
{
	icr_write(m, 0x4500, dest);
	icr_write(m, 0x0600 | TRAMPOLINE >> 12, dest);
}

static void restart(struct cpu *m, u32 id)
{
	apic_sane(m);
	u32 xid = cpu[id].xid;
	__atomic_or_fetch(&booting, 1u << id, __ATOMIC_SEQ_CST);
	init_sipi(m, id);
	if (xid != id && xid != 0 && xid < 0xFF)
		init_sipi(m, xid);
	total_restarts++;
}

static u32 total_ops(void)
{
	u32 n = 0;
	for (int i = 0; i < ncpus; i++)
		n += cpu[i].ops;
	return n;
}

static u32 secs_done, next_report;

static void summary(void)
{
	u32 ops = total_ops(), kinds[NKINDS] = {0}, traps = 0, irqs = 0, nmis = 0;
	for (int i = 0; i < ncpus; i++) {
		for (int k = 0; k < NKINDS; k++)
			kinds[k] += cpu[i].kind[k];
		traps += cpu[i].traps, irqs += cpu[i].irqs, nmis += cpu[i].nmis;
		printf("# cpu %d: %u accesses, started %u times\n", i, cpu[i].ops, cpu[i].started);
	}
	for (int k = 0; k < NKINDS; k++)
		printf("# %s: %u\n", kind_name[k], kinds[k]);
	printf("# fuzz seed=%u: %u accesses in %u s on %d CPUs, %u per second; %u faults, %u interrupts, %u NMIs taken; %u restarts\n",
	       seed, ops, secs_done, ncpus, secs_done ? ops / secs_done : ops, traps, irqs, nmis, total_restarts);
	printf("# trampoline found overwritten: %u times by the monitor, %u times just before a SIPI, %u while a CPU started; "
	       "GDT %u times before a SIPI, %u while a CPU started\n",
	       tramp.hits, tramp.hits_sipi, tramp.hits_start, gdt_region.hits_sipi, gdt_region.hits_start);
}

/* The end of a seed by the guest's own act, not a failure: AP i stopped
 * with its APIC hardware-disabled (an INIT, the fuzz's own or a garbled
 * message's, landed as it disabled it), where neither INIT nor SIPI
 * reaches it, under KVM too (kvm_irq_delivery_to_apic skips an APIC that
 * is not kvm_apic_present), so nothing can start it again. Status 5; the
 * host side checks govmm's view agrees (tests/guestfuzz_test.go). */
static void stopped_apic_off(int i)
{
	serial_sane();
	summary();
	printf("END fuzz: CPU %d stopped with its APIC hardware-disabled (seed=%u)\n", i, seed);
	vm_exit(2);
}

static void monitor(struct cpu *m, u64 now)
{
	repair_low();
	if (checksum() != ro_sum) {
		serial_sane();
		die("invariant", "the guest's code, IDT or handler table changed (seed=%u)", seed);
	}
	for (int i = 0; i < ncpus; i++) {
		struct cpu *c = &cpu[i];
		if (c == m || parked & 1u << i)
			continue;
		/* A start is a beat too: a CPU the last restart started and
		 * that has not made its first access yet is not INITed again
		 * (seed 1006 of a 30-minute run: the second restart's INIT
		 * landed as the CPU disabled its APIC on its way up, and the
		 * SIPI after it found the APIC disabled). */
		if (c->ops != c->last_ops || c->started != c->last_started) {
			c->last_ops = c->ops, c->last_started = c->started, c->stale = 0;
			continue;
		}
		c->stale++;                     /* half-second periods without a beat */
		if (i && (c->stale == 3 || c->stale == 6 || c->stale == 9))
			restart(m, i);          /* not the BSP: INIT would reset the machine */
		if (i && c->stale >= 12 && c->apic_off)
			stopped_apic_off(i);
		if (c->stale >= 12) {
			serial_sane();
			die("heartbeat", "CPU %d made no access for 6 s and did not come back after %s; its xAPIC ID last seen %u (seed=%u)", i,
			    i ? "3 restarts" : "none (the BSP, which INIT would reset)", c->xid, seed);
		}
	}
	while (now - t_start >= (u64)(secs_done + 1) * tsc_hz)
		secs_done++;
	if (secs_done >= next_report) {
		serial_sane();
		printf("# t=%us: %u accesses, %u restarts\n", secs_done, total_ops(), total_restarts);
		next_report = secs_done + 2;
	}
	if (secs_done < secs)
		return;
	quiesce = 1;
	u32 want = 0;
	for (int i = 0; i < ncpus; i++)
		if (&cpu[i] != m && cpu[i].stale < 3)
			want |= 1u << i;
	WAIT((parked & want) == want, 5);
	serial_sane();
	summary();
	check(checksum() == ro_sum, "invariant: code, IDT and handler table intact", "changed");
	finish();
}

static void maybe_monitor(struct cpu *c)
{
	u64 now = rdtsc();
	if (now < mon_next)
		return;
	u32 id = c - cpu + 1;
	if (!__sync_bool_compare_and_swap(&mon_owner, 0, id)) {
		if (now - mon_taken < 5 * tsc_hz) /* its holder may have been stopped */
			return;
		mon_owner = id;
	}
	mon_taken = now;
	mon_next = now + tsc_hz / 2;
	monitor(c, now);
	mon_owner = 0;
}

/* ---- traps ---- */
static void on_nmi(struct frame *f) { me()->nmis++; }

static void on_trap(struct frame *f)
{
	struct cpu *c = me();
	if (!c->jb_ok)
		die("trap", "vector %u at eip %x before the fuzz loop", f->vec, f->eip);
	if (f->vec < 32)
		c->traps++;
	else
		c->irqs++;
	__builtin_longjmp(c->jb, 1);
}

static u32 initial_apic_id(void)
{
	u32 r[4];
	cpuid(1, r);
	return r[1] >> 24;
}

/* restart=1: nothing but restarts, to tell whether restarting a CPU
 * alone brings the trampoline failures of the full fuzz (README, "The
 * guest attacks"). Every AP, each time it starts, makes one exit of a
 * seeded kind (an unknown MSR's #GP, an MSR read, an OUT, an IN, an MMIO
 * read, an MMIO write, its own ICR), half the time after two NMIs to
 * itself (the second stays pending: NMIs are blocked until an IRET that
 * the handler never does), and spins; a quarter of the starts first move
 * the AP to xAPIC with an xAPIC ID of its own (0x20 + its initial one),
 * which the INIT that stops it keeps. The BSP restarts each AP (restart:
 * at its initial ID and the one it set) as soon as it has made its exit,
 * for secs seconds. */
static u32 restart_only;
static volatile u32 restart_phase[MAXC];

static void restartee(struct cpu *c)
{
	apic_sane(c);
	if (one_in(c, 4)) {
		to_xapic(c);
		apic_reg(c, APIC_SVR, 0x1FF);
		apic_reg(c, APIC_ID, (0x20u + (u32)(c - cpu)) << 24);
		apic_learn(c);                                  /* reads it back: c->xid */
	}
	c->jb_ok = 1;
	if (__builtin_setjmp(c->jb) == 0) {
		if (one_in(c, 2)) {                             /* NMI to itself: its handler */
			icr_write(c, ICR_NMI | 0x40000, 0);         /* returns without IRET, so */
			for (int i = 0; i < 1000; i++)              /* NMIs stay blocked; and a */
				pause();                            /* second one stays pending */
			icr_write(c, ICR_NMI | 0x40000, 0);
		}
		switch (below(c, 7)) {
		case 0: rdmsr(0x4D564FFFu); break;              /* refused: #GP */
		case 1: rdmsr(0x80F); break;                    /* x2APIC SVR */
		case 2: outb(0x80, 1); break;
		case 3: inb(0x3FD); break;
		case 4: *(volatile u32 *)(0xFEC00000u) = 0; break;
		case 5: (void)*(volatile u32 *)(0xFEC00010u); break;
		default: apic_reg(c, APIC_TPR, 0); break;
		}
	}
	c->ops++;
	for (;;)
		pause();
}

static void restart_loop(void)
{
	struct cpu *m = &cpu[0];
	apic_sane(m);
	u64 end = t_start + (u64)secs * tsc_hz;
	u32 n = 0, lost = 0;
	while (rdtsc() < end) {     /* each start reuses its CPU's stack (ap_slot_by_id) */
		for (int i = 1; i < ncpus; i++) {
			u32 before = cpu[i].ops;
			restart(m, i);
			n++;
			if (!WAIT(cpu[i].ops != before, 5))
				lost++;
		}
	}
	printf("# restart=1: %u restarts, %u CPUs that did not come back\n", n, lost);
	check(lost == 0, "restarts", "%u of %u restarted CPUs did not come back", lost, n);
	finish();
}

static void fuzz_cpu(int idx)
{
	u32 id = initial_apic_id();
	if (id >= MAXC || (int)id >= ncpus)
		for (;;)
			asm volatile("cli; hlt");
	slot_of[idx] = id;
	__atomic_and_fetch(&booting, ~(1u << id), __ATOMIC_SEQ_CST);
	struct cpu *c = &cpu[id];
	c->jb_ok = 0;
	if (!c->rng)
		c->rng = (seed * 0x9E3779B97F4A7C15ull) ^ ((u64)(id + 1) << 32 | 0x5bd1e995u);
	c->started++;
	if (restart_only && id != 0)
		restartee(c);
	apic_sane(c);                       /* x2APIC where there is one */
	if (c->x2 && one_in(c, 2)) {        /* or back to xAPIC through disabled */
		to_xapic(c);
		apic_reg(c, APIC_SVR, 0x1FF);
	}
	if (__builtin_setjmp(c->jb)) {
		if (mon_owner == (u32)(c - cpu + 1))
			mon_owner = 0;          /* the trap hit the monitor */
		if (c->apic_off)
			apic_learn(c);          /* an APIC_BASE write that faulted changed nothing */
	}
	c->jb_ok = 1;
	for (;;) {
		cli();
		if (quiesce) {
			c->jb_ok = 0;
			__atomic_or_fetch(&parked, 1u << id, __ATOMIC_SEQ_CST);
			for (;;)
				asm volatile("cli; hlt");
		}
		int k = pick(c);
		ops[k](c);
		c->kind[k]++;
		c->ops++;
		if ((c->ops & 31) == 0)
			maybe_monitor(c);
	}
}

/* ---- set-up ---- */
static void pci_scan(void)
{
	struct ent *e = find("pci ecam");
	if (!e)
		return;
	ecam = (u32)e->base, ecam_len = (u32)(e->end - e->base + 1);
	for (u32 dev = 1; dev < 32 && nfns < MAXFN; dev++) {
		u32 cfg = ecam + (dev << 15);
		if ((cfg_read(cfg, 0, 4) & 0xFFFF) == 0xFFFF)
			continue;
		struct fn *f = &fns[nfns++];
		f->cfg = cfg;
		for (int i = 0; i < 6; i++) {       /* size each BAR: all ones, read, restore */
			u32 off = 0x10 + 4 * i, old = cfg_read(cfg, off, 4);
			cfg_write(cfg, off, 4, ~0u);
			u32 sz = cfg_read(cfg, off, 4);
			cfg_write(cfg, off, 4, old);
			f->bar[i] = old;
			if (sz && sz != ~0u)
				f->barsz[i] = ~(sz & (old & 1 ? ~3u : ~15u)) + 1;
			if ((old & 7) == 4)             /* 64-bit: the high half is not a BAR */
				i++;
		}
		for (u32 p = cfg_read(cfg, 0x34, 1) & 0xFC, n = 0; p && n < 48; p = cfg_read(cfg, p + 1, 1) & 0xFC, n++) {
			u32 id = cfg_read(cfg, p, 1);
			if (id == 0x11) {
				f->msix_cap = p;
				f->msix_n = (cfg_read(cfg, p + 2, 2) & 0x7FF) + 1;
				u32 t = cfg_read(cfg, p + 4, 4);
				f->msix_bar = t & 7, f->msix_off = t & ~7u;
			}
			if (id == 0x09) {
				u32 type = cfg_read(cfg, p + 3, 1), bar = cfg_read(cfg, p + 4, 1), off = cfg_read(cfg, p + 8, 4);
				if (type == 1)
					f->common_bar = bar, f->common_off = off;
				if (type == 2)
					f->notify_bar = bar, f->notify_off = off, f->notify_mult = cfg_read(cfg, p + 16, 4);
			}
		}
		cfg_write(cfg, 0x04, 2, 0x7);       /* I/O, memory, bus master */
		printf("# pci %02x.0 %04x:%04x msix=%u common=bar%u+%x notify=bar%u+%x*%u\n", dev,
		       cfg_read(cfg, 0, 2), cfg_read(cfg, 2, 2), f->msix_n, f->common_bar, f->common_off,
		       f->notify_bar, f->notify_off, f->notify_mult);
	}
}

static void calibrate(void)
{
	u32 p0 = inl(0x608);
	u64 t0 = rdtsc();
	while (inl(0x608) - p0 < 357954)    /* 100 ms of the 3.579545 MHz PM timer */
		pause();
	u32 d = (u32)(rdtsc() - t0);
	tsc_hz = (u64)d * 10, tsc_khz = d / 100;
}

void test_main(void)
{
	seed = param_u32("seed", 1);
	secs = param_u32("secs", 10);
	init_on = param_u32("init", 1);
	smi_on = param_u32("smi", 0);
	low_guard = param_u32("lowguard", 1);
	printf("fuzz seed=%u secs=%u init=%u smi=%u lowguard=%u\n", seed, secs, init_on, smi_on, low_guard);
	if (ncpus > MAXC)
		die("cpus", "at most %d vCPUs, has %d", MAXC, ncpus);
	guard_init();
	read_map();
	for (int i = 0; i < nmap; i++)
		printf("# map %s %x-%x %s\n", map[i].space == SP_PIO ? "pio" : map[i].space == SP_MMIO ? "mmio" : "msr",
		       (u32)map[i].base, (u32)map[i].end, map[i].name);
	pci_scan();
	calibrate();
	x2avail = has_x2apic();
	for (int k = 0; k < NKINDS; k++)
		weight_sum += weight[k];
	for (int v = 0; v < 256; v++)
		isr_table[v] = on_trap;
	isr_table[2] = on_nmi;
	memset((void *)ARENA, 0, ARENA_SIZE);
	repair_low();
	ro_sum = checksum();
	t_start = rdtsc();
	mon_next = t_start + tsc_hz / 2;
	printf("# tsc %u kHz, %d CPUs, %d ranges, %d PCI functions\n", tsc_khz, ncpus, nmap, nfns);
	restart_only = param_u32("restart", 0);
	/* A start per restart, thousands in a long seed (VT-x seed 1004: 1,441
	 * in 56 s, until the 1,024 stacks ran out and every restarted CPU
	 * halted in entry.S's halt): each CPU takes its own stack again. */
	ap_slot_by_id = 1;
	smp_boot(fuzz_cpu);
	if (restart_only)
		restart_loop();
	fuzz_cpu(0);
}
