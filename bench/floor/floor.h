/* The floor VMMs' shared parts: errors, the VM and its vCPUs in flat 32-bit
 * protected mode with no in-kernel irqchip (as govmm), MSR exits to user
 * space for the reasons govmm asks for them. floorvmm.c is the exit floor,
 * flooripi.c the IPI floor. */
#ifndef FLOOR_H
#define FLOOR_H
#include <linux/kvm.h>
#include <stdint.h>

#define MEM_SIZE  (2u << 20)
#define LOAD_AT   0x1000u
#define STACK_TOP (MEM_SIZE - 16)
/* rttloop.S stores each round trip's cycles here (32 bits each), for the
 * first FLOOR_SAMPLES_CAP of a section: the IPI floor's median. */
#define FLOOR_SAMPLES     0x100000u
#define FLOOR_SAMPLES_CAP 65536u

struct floor_vm {
	int kvm, fd, runsize;
	uint8_t *mem;
};

/* die prints "floorvmm: ..." on stderr and exits with status 2. */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
int xioctl(int fd, unsigned long req, void *arg, const char *what);

/* floor_vm_create opens kvmpath and makes a VM of MEM_SIZE bytes of RAM
 * holding blob at LOAD_AT. */
void floor_vm_create(struct floor_vm *vm, const char *kvmpath, const char *blob);
/* floor_vcpu_create makes vCPU id with KVM's supported CPUID, flat 32-bit
 * protected mode and regs; returns its fd and maps its kvm_run. */
int floor_vcpu_create(struct floor_vm *vm, int id, const struct kvm_regs *regs, struct kvm_run **run);

/* floor_parse_affinity reads -c's list of host CPUs; floor_pin pins the
 * calling thread to vCPU id's (nothing without -c). */
void floor_parse_affinity(const char *list);
void floor_pin(int id);

/* floor_ipi runs the IPI floor (flooripi.c): kind 0 x2APIC, 1 xAPIC. */
int floor_ipi(struct floor_vm *vm, const char *name, int kind, unsigned long rounds, unsigned long gap);
#endif
