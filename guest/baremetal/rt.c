/* Shared runtime of the bare-metal guests: see rt.h. */
#include "rt.h"

u64 idt[256] __attribute__((aligned(8)));
isr_fn isr_table[256];
int ncpus = 1;
int x2apic;
volatile u32 apic_acc[MAX_CPUS];
volatile u32 cpu_apicid[MAX_CPUS];

extern char isr_stubs[], tramp_start[], tramp_end[];
extern u8 stacks[];
static int failed;
static void (*volatile ap_fn)(int);

void *memset(void *d, int c, unsigned n)
{
	u8 *p = d;
	while (n--)
		*p++ = c;
	return d;
}

void *memcpy(void *d, const void *s, unsigned n)
{
	u8 *p = d;
	const u8 *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

void delay(u64 ticks)
{
	u64 end = rdtsc() + ticks;
	while (rdtsc() < end)
		pause();
}

/* ---- console: 16550 at 0x3f8, poll LSR.THRE before each byte ---- */
static void con_putc(char c)
{
	for (int i = 0; i < 1000 && !(inb(0x3fd) & 0x20); i++)
		;
	outb(0x3f8, c);
}

static void put_u(u32 v, u32 base, int width, char pad)
{
	char b[12];
	int i = 0;
	do {
		b[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (i < width && i < 12)
		b[i++] = pad;
	while (i)
		con_putc(b[--i]);
}

static void vprintf(const char *f, va_list ap)
{
	for (; *f; f++) {
		if (*f != '%') {
			con_putc(*f);
			continue;
		}
		char pad = ' ';
		int w = 0;
		if (*++f == '0')
			pad = '0', f++;
		while (*f >= '0' && *f <= '9')
			w = w * 10 + *f++ - '0';
		switch (*f) {
		case 'd': {
			int v = va_arg(ap, int);
			if (v < 0)
				con_putc('-'), v = -v;
			put_u(v, 10, w, pad);
			break;
		}
		case 'u': put_u(va_arg(ap, u32), 10, w, pad); break;
		case 'x': put_u(va_arg(ap, u32), 16, w, pad); break;
		case 'c': con_putc(va_arg(ap, int)); break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			while (s && *s)
				con_putc(*s++);
			break;
		}
		case 0: return;
		default: con_putc(*f);
		}
	}
}

void printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* ---- results ---- */
void ok(const char *what) { printf("ok %s\n", what); }

static void vfail(const char *what, const char *fmt, va_list ap)
{
	failed = 1;
	printf("FAIL %s: ", what);
	vprintf(fmt, ap);
	con_putc('\n');
}

void fail(const char *what, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(what, fmt, ap);
	va_end(ap);
}

int check(int cond, const char *what, const char *fmt, ...)
{
	va_list ap;
	if (cond) {
		ok(what);
		return 1;
	}
	va_start(ap, fmt);
	vfail(what, fmt, ap);
	va_end(ap);
	return 0;
}

void vm_exit(u32 code)
{
	outl(0xf4, code);               /* status (code << 1) | 1 */
	for (;;)
		asm volatile("cli; hlt");
}

void finish(void)
{
	printf("%s %s\n", failed ? "FAIL" : "PASS", guest_name);
	vm_exit(failed);
}

void die(const char *what, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(what, fmt, ap);
	va_end(ap);
	finish();
}

/* ---- interrupts ---- */
void isr_dispatch(struct frame *f)
{
	isr_fn h = isr_table[f->vec];
	if (h) {
		h(f);
		return;
	}
	die("exception", "unexpected vector %u error %x at eip %x on cpu index %d",
	    f->vec, f->err, f->eip, this_cpu());
}

static void isr_spurious(struct frame *f) { (void)f; } /* SVR vector: no EOI */

static void idt_init(void)
{
	for (int v = 0; v < 256; v++) {
		u32 a = (u32)isr_stubs + v * 16;
		/* 32-bit interrupt gate, selector 0x08, DPL 0 */
		idt[v] = (a & 0xffff) | 0x08u << 16 | (u64)((a & 0xffff0000) | 0x8E00) << 32;
	}
	isr_table[0xFF] = isr_spurious;
}

/* ---- command line: "key=value" words (QEMU prefixes the kernel path) ---- */
static char cmdline[512];
static char *words[32];
static int nwords;

static void parse_cmdline(const char *s)
{
	int i;
	for (i = 0; s[i] && i < (int)sizeof(cmdline) - 1; i++)
		cmdline[i] = s[i];
	for (char *p = cmdline; *p && nwords < 32;) {
		while (*p == ' ')
			*p++ = 0;
		if (*p)
			words[nwords++] = p;
		while (*p && *p != ' ')
			p++;
	}
}

const char *param(const char *key)
{
	for (int i = 0; i < nwords; i++) {
		const char *w = words[i], *k = key;
		while (*k && *w == *k)
			w++, k++;
		if (!*k && *w == '=')
			return w + 1;
	}
	return 0;
}

u32 param_u32(const char *key, u32 def)
{
	const char *s = param(key);
	u32 v = 0, base = 10;
	if (!s || !*s)
		return def;
	if (s[0] == '0' && s[1] == 'x')
		base = 16, s += 2;
	for (; *s; s++) {
		u32 d = *s >= '0' && *s <= '9' ? *s - '0' :
			*s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : 99;
		if (d >= base)
			return def;
		v = v * base + d;
	}
	return v;
}

/* ---- fw_cfg: 16-bit key to 0x510, little-endian bytes from 0x511 ---- */
void fw_cfg_read(u16 key, void *buf, int len)
{
	outw(0x510, key);
	for (int i = 0; i < len; i++)
		((u8 *)buf)[i] = inb(0x511);
}

/* ---- local APIC ---- */
#define XAPIC_MMIO 0xFEE00000u

int this_cpu(void)
{
	u32 sp;
	asm("mov %%esp, %0" : "=r"(sp));
	sp = (sp - (u32)stacks) / STACK_SIZE;
	return sp < MAX_CPUS ? (int)sp : 0;
}

u32 apic_read(u32 reg)
{
	apic_acc[this_cpu()]++;
	if (x2apic)
		return (u32)rdmsr(0x800 + (reg >> 4));
	return *(volatile u32 *)(XAPIC_MMIO + reg);
}

void apic_write(u32 reg, u32 v)
{
	apic_acc[this_cpu()]++;
	if (x2apic)
		wrmsr(0x800 + (reg >> 4), v);
	else
		*(volatile u32 *)(XAPIC_MMIO + reg) = v;
}

u32 apic_id(void)
{
	u32 v = apic_read(APIC_ID);
	return x2apic ? v : v >> 24;
}

/* Like Linux: x2apic_send_IPI (one WRMSR of the 64-bit ICR) and xAPIC
 * __xapic_wait_icr_idle + __default_send_IPI_dest_field (read ICR for the
 * busy bit once, write ICR2, write ICR). */
void apic_icr(u32 dest, u32 lo)
{
	if (x2apic) {
		apic_acc[this_cpu()]++;
		wrmsr(0x830, (u64)dest << 32 | lo);
		return;
	}
	while (apic_read(APIC_ICR) & (1u << 12))
		pause();
	apic_write(APIC_ICR2, dest << 24);
	apic_write(APIC_ICR, lo);
}

/* Like Linux __default_send_IPI_shortcut: no ICR2 write. */
void apic_icr_short(u32 lo)
{
	if (x2apic) {
		apic_acc[this_cpu()]++;
		wrmsr(0x830, lo);
		return;
	}
	while (apic_read(APIC_ICR) & (1u << 12))
		pause();
	apic_write(APIC_ICR, lo);
}

void apic_self_ipi(u32 vec)
{
	if (x2apic) {
		apic_acc[this_cpu()]++;
		wrmsr(0x83F, vec);      /* SELF IPI register */
	} else {
		apic_icr_short(ICR_SELF | vec);
	}
}

int has_x2apic(void)
{
	u32 r[4];
	cpuid(1, r);
	return r[2] >> 21 & 1;
}

int x2apic_enable(void)
{
	if (!has_x2apic())
		return 0;
	wrmsr(0x1B, rdmsr(0x1B) | 0xC00);     /* APIC_BASE: EN | EXTD */
	x2apic = 1;
	return 1;
}

/* ---- SMP ---- */
void ap_entry(int idx)                  /* from the trampoline, on its own stack */
{
	ap_fn(idx);
	for (;;)
		asm volatile("cli; hlt");
}

void smp_boot(void (*fn)(int idx))
{
	ap_fn = fn;
	memcpy((void *)TRAMPOLINE, tramp_start, tramp_end - tramp_start);
	/* No delay between INIT and SIPI: the VMM's APs start at once. */
	apic_icr_short(ICR_ALLBUT | 0x4500);                    /* INIT, assert */
	apic_icr_short(ICR_ALLBUT | 0x0600 | TRAMPOLINE >> 12); /* SIPI 0x08 */
}

/* ---- entry from entry.S ---- */
void kmain(u32 magic, const u32 *mbi)
{
	u32 flags = 0, mem_upper = 0, mods = 0;
	u16 n = 0;

	if (magic == 0x2BADB002 && mbi) {
		flags = mbi[0];
		if (flags & 1)
			mem_upper = mbi[2];
		if (flags & 4)   /* copy now: the trampoline and tests reuse low memory */
			parse_cmdline((const char *)mbi[4]);
		if (flags & 8)
			mods = mbi[5];
	}
	idt_init();
	/* Mask both 8259s: under QEMU, SeaBIOS leaves the PIT on IRQ0 at vector 8
	 * (virtual wire), which would look like a #DF once IF=1. */
	outb(0x21, 0xFF);
	outb(0xA1, 0xFF);
	fw_cfg_read(0x05, &n, 2);
	ncpus = n;
	printf("govmm-guest: %s start cpus=%d\n", guest_name, ncpus);
	printf("# multiboot flags=%x mem_upper=%uK mods=%u cmdline='%s'\n",
	       flags, mem_upper, mods, cmdline);
	if (magic != 0x2BADB002)
		die("multiboot", "EAX=%x, want 2badb002", magic);
	if (n < 1 || n > MAX_CPUS)
		die("fw_cfg", "cpu count %u out of range 1..%u", n, MAX_CPUS);
	test_main();
	finish();
}

/* The BSP's LAPIC as the IOAPIC and remapping guests want it: software
 * enabled, TPR 0, flat logical ID 1 in xAPIC mode, APIC ID 0. */
void bsp_apic_setup(void)
{
	cpu_apicid[0] = apic_id();
	apic_write(APIC_SVR, 0x1FF);
	apic_write(APIC_TPR, 0);
	if (!x2apic) {
		apic_write(APIC_DFR, 0xFFFFFFFF);
		apic_write(APIC_LDR, 1u << 24);
	}
	if (cpu_apicid[0] != 0)
		die("bsp", "APIC ID %u, want 0", cpu_apicid[0]);
}

/* govmm's CPUID signature leaf 0x40000100 ("Govm..."). */
int govmm_vmm(void)
{
	u32 r[4];

	cpuid(0x40000100, r);
	return r[1] == 0x6d766f47 && r[0] >= 0x40000101u;   /* "Govm" */
}

/* Its feature leaf 0x40000101, EAX bit b (0 when not under govmm). */
static int govmm_feature(u32 b)
{
	u32 r[4];

	if (!govmm_vmm())
		return 0;
	cpuid(0x40000101u, r);
	return (r[0] & (1u << b)) != 0;
}

/* EAX bit 1 is the SYSCALL doorbell (package pvsyscall). */
int govmm_doorbell(void) { return govmm_feature(1); }

/* EAX bit 2: the local APIC is KVM's (govmm --lapic=kvm). */
int govmm_kvm_lapic(void) { return govmm_feature(2); }
