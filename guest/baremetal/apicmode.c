/* APIC modes of the IPI guests: see apicmode.h. */
#include "apicmode.h"

const char *const mode_names[NMODES] = {
	"xapic-phys", "xapic-flat", "xapic-cluster", "x2apic-phys", "x2apic-cluster", "pv",
};
int mode, logical, pveoi;

/* pveoi=1: KVM's PV EOI ABI (CPUID 0x40000001 bit 6, MSR 0x4B564D04). */
#define MSR_KVM_PV_EOI_EN 0x4B564D04
static volatile u32 pveoi_word[MAX_CPUS] __attribute__((aligned(4)));

static volatile u32 setup_err[MAX_CPUS], setup_val[MAX_CPUS];

void mode_parse(void)
{
	const char *m = param("mode");
	for (mode = 0; mode < NMODES && !(m && streq(m, mode_names[mode])); mode++)
		;
	if (mode == NMODES)
		die("mode", "mode=%s: want xapic-phys|xapic-flat|xapic-cluster|x2apic-phys|x2apic-cluster|pv",
		    m ? m : "(missing)");
	logical = mode == XFLAT || mode == XCLUSTER || mode == X2CLUSTER;
	pveoi = param_u32("pveoi", 0);
}

/* The feature word (EAX of leaf + 1) of the hypervisor interface whose
 * signature (EBX, ECX, EDX of leaf) is b, c, d; 0 if the signature differs. */
static u32 hv_features(u32 leaf, u32 b, u32 c, u32 d)
{
	u32 r[4];
	cpuid(leaf, r);
	if (r[1] != b || r[2] != c || r[3] != d)
		return 0;
	cpuid(leaf + 1, r);
	return r[0];
}

/* CPUID exits: ask only what the mode needs. */
void mode_require(void)
{
	if (pveoi && !(hv_features(0x40000000, 0x4b4d564b, 0x564b4d56, 0x4d) >> 6 & 1))       /* "KVMKVMKVM" */
		die("pveoi", "CPUID 0x40000001 bit 6 (PV EOI) is clear (run govmm with --pv-eoi)");
	if (mode == PV && !(hv_features(0x40000100, 0x6d766f47, 0x766f476d, 0x6f476d6d) & 1)) /* "GovmmGovmmGo" */
		die("pv", "CPUID 0x40000100/0x40000101 announce no govmm PV send-IPI (run with --pv-ipi)");
	if (mode >= X2PHYS && !has_x2apic())
		die("x2apic", "CPUID.1:ECX bit 21 (x2APIC) is clear: mode=%s impossible", mode_names[mode]);
}

int member(u32 id)
{
	return mode == XFLAT ? id < 8 : mode == XCLUSTER ? id < 60 : 1;
}

u32 mode_members(u32 n)
{
	u32 m = 0;
	for (u32 id = 0; id < n; id++)
		m += member(id);
	return m;
}

u32 logical_id(u32 id)
{
	switch (mode) {
	case XFLAT:    return 1u << id;
	case XCLUSTER: return (id / 4) << 4 | 1u << (id % 4);
	default:       return (id >> 4) << 16 | 1u << (id & 15);   /* x2APIC */
	}
}

u32 logical_group(void)
{
	return mode == XFLAT ? 8 : mode == XCLUSTER ? 4 : 16;
}

u32 logical_dest(u32 base, u32 mask)
{
	switch (mode) {
	case XCLUSTER:  return (base / 4) << 4 | mask;
	case X2CLUSTER: return (base / 16) << 16 | mask;
	default:        return mask;                            /* flat */
	}
}

u32 setup_cpu(int idx)
{
	if (mode >= X2PHYS && !x2apic_enable()) {
		setup_err[idx] = 1;
		return ~0u;
	}
	u32 id = apic_id();
	if (pveoi)
		wrmsr(MSR_KVM_PV_EOI_EN, (u32)&pveoi_word[idx] | 1);
	apic_write(APIC_SVR, 0x1FF);
	apic_write(APIC_TPR, 0);
	if (mode == XFLAT || mode == XCLUSTER) {
		apic_write(APIC_DFR, mode == XFLAT ? 0xFFFFFFFF : 0x0FFFFFFF);
		apic_write(APIC_LDR, id < (u32)ncpus && member(id) ? logical_id(id) << 24 : 0);
	}
	if (mode == X2CLUSTER) {        /* read-only, derived from the ID */
		u32 ldr = apic_read(APIC_LDR);
		if (ldr != logical_id(id))
			setup_err[idx] = 2, setup_val[idx] = ldr;
	}
	return id;
}

void setup_bsp(void)
{
	cpu_apicid[0] = setup_cpu(0);
	if (setup_err[0] || cpu_apicid[0] != 0)
		die("bsp setup", "APIC ID %u, error %u (LDR %x)", cpu_apicid[0], setup_err[0], setup_val[0]);
}

void check_cpus(void)
{
	static u8 seen[MAX_CPUS];
	u32 n = ncpus;
	for (u32 i = 0; i < n; i++) {
		u32 id = cpu_apicid[i];
		if (setup_err[i])
			die("ap setup", "cpu index %u: %s (LDR %x, want %x)", i,
			    setup_err[i] == 1 ? "no x2APIC" : "x2APIC LDR not derived from the ID",
			    setup_val[i], logical_id(id));
		if (id >= n || seen[id])
			die("apic ids", "cpu index %u has APIC ID %u: want distinct IDs 0..%u", i, id, n - 1);
		seen[id] = 1;
	}
}

void icr_to(u32 id, u32 lo)
{
	if (logical)
		apic_icr(logical_id(id), ICR_LOGICAL | lo);
	else
		apic_icr(id, lo);
}

int eoi_pv(int cpu)
{
	if (pveoi && (__atomic_fetch_and(&pveoi_word[cpu], ~1u, __ATOMIC_SEQ_CST) & 1))
		return 1;
	apic_eoi();
	return 0;
}
