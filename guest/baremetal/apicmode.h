/* APIC modes of the IPI guests (ipi.c, storm.c): the cmdline's mode= and
 * pveoi=, the CPUID checks they need, each CPU's set-up in the mode, and
 * sends addressed by APIC ID in it.
 *
 * The guests count their own APIC accesses (apic_acc, see rt.h) and compare
 * them with govmm's exit counts, so every helper here names the accesses it
 * makes: the guests' counts are what their own code says, helpers included.
 *
 * Members: the CPUs with a logical ID of their own, APIC IDs < 8 in
 * xapic-flat, < 60 in xapic-cluster (15 clusters of 4), all in the other
 * modes. Logical-mode sends can only reach members. */
#ifndef APICMODE_H
#define APICMODE_H
#include "rt.h"

enum { XPHYS, XFLAT, XCLUSTER, X2PHYS, X2CLUSTER, PV, NMODES };
extern const char *const mode_names[NMODES];
extern int mode;                        /* XPHYS..PV, from mode= */
extern int logical;                     /* xapic-flat, xapic-cluster, x2apic-cluster */
extern int pveoi;                       /* pveoi=1: EOIs through KVM's PV EOI */

/* mode= (dies if missing or unknown) and pveoi=; no access. */
void mode_parse(void);
/* Dies unless CPUID offers what mode and pveoi need: PV EOI, govmm's PV
 * send-IPI (pv), x2APIC (x2apic-*, pv); no access. */
void mode_require(void);

int member(u32 id);                     /* APIC ID id has a logical ID of its own */
u32 mode_members(u32 n);                /* members among APIC IDs 0..n-1 */
u32 logical_id(u32 id);                 /* logical destination naming just id (its LDR) */
u32 logical_group(void);                /* logical modes: APIC IDs one ICR can name, 8 / 4 / 16 */
u32 logical_dest(u32 base, u32 mask);   /* logical destination: mask bits of the group from ID base */

/* This CPU (index idx), outside any section: x2APIC enable in x2APIC modes
 * and pv, PV EOI enable (pveoi), SVR, TPR 0; xAPIC logical modes set DFR
 * and LDR (0 for non-members), x2apic-cluster checks its derived LDR.
 * Accesses: ID read, SVR, TPR (3); +2 xapic-flat/cluster, +1 x2apic-cluster.
 * Returns the APIC ID (~0 if x2APIC cannot be enabled). */
u32 setup_cpu(int idx);
void setup_bsp(void);                   /* setup_cpu(0) into cpu_apicid[0]; dies unless ID 0 */
void check_cpus(void);                  /* after bring-up: dies on a set-up error or IDs not 0..ncpus-1 */

/* One apic_icr to APIC ID id: its logical ID in logical modes, else
 * physical (xAPIC 3 accesses, x2APIC 1). lo: vector and delivery mode. */
void icr_to(u32 id, u32 lo);

/* govmm's PV send-IPI (pvipi package): WRMSR 0x4D564F50 with EAX = vector,
 * EDX = bitmap words, ESI = bitmap address, EDI = lowest APIC ID. One exit
 * sends to every APIC ID set in the bitmap (64-bit words, bit i = APIC ID
 * i). Not counted in apic_acc: a guest that counts it does so itself. */
#define MSR_PV_SEND_IPI 0x4D564F50
static inline void pv_send_ipi(u32 vec, u32 words, const u32 *bitmap)
{
	asm volatile("wrmsr" :: "c"(MSR_PV_SEND_IPI), "a"(vec), "d"(words), "S"(bitmap), "D"(0) : "memory");
}

/* EOI on CPU index cpu, as Linux's kvm_guest_apic_eoi_write: with pveoi,
 * if the VMM set cpu's PV EOI bit, clearing it is the EOI (no access, no
 * exit) and this returns 1; else a real EOI (1 access), returns 0. */
int eoi_pv(int cpu);

#endif
