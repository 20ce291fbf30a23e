/* The floor VMMs' VM and vCPU set-up (floor.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "floor.h"

static int affinity[64], naffinity;

void floor_parse_affinity(const char *list)
{
	for (const char *p = list; *p;) {
		char *end;
		long c = strtol(p, &end, 10);
		if (end == p || c < 0 || c >= CPU_SETSIZE || (*end && *end != ',') || naffinity == 64)
			die("-c %s: want a comma-separated list of host CPUs", list);
		affinity[naffinity++] = (int)c;
		p = *end ? end + 1 : end;
	}
}

void floor_pin(int id)
{
	if (naffinity == 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(affinity[id % naffinity], &set);
	if (sched_setaffinity(0, sizeof set, &set) < 0)
		die("pinning vCPU %d to host CPU %d: %s", id, affinity[id % naffinity], strerror(errno));
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("floorvmm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

int xioctl(int fd, unsigned long req, void *arg, const char *what)
{
	int r = ioctl(fd, req, arg);
	if (r < 0)
		die("%s: %s", what, strerror(errno));
	return r;
}

static void flat(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	memset(s, 0, sizeof *s);
	s->base = 0, s->limit = 0xffffffff, s->selector = sel, s->type = type;
	s->present = 1, s->dpl = 0, s->db = 1, s->s = 1, s->g = 1;
}

void floor_vm_create(struct floor_vm *vm, const char *kvmpath, const char *blob)
{
	int fd = open(blob, O_RDONLY);
	if (fd < 0)
		die("%s: %s", blob, strerror(errno));
	vm->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (vm->mem == MAP_FAILED)
		die("guest memory: %s", strerror(errno));
	ssize_t n = read(fd, vm->mem + LOAD_AT, MEM_SIZE - LOAD_AT - (256u << 10));
	if (n <= 0)
		die("%s: empty or unreadable", blob);
	close(fd);

	vm->kvm = open(kvmpath, O_RDWR | O_CLOEXEC);
	if (vm->kvm < 0)
		die("%s: %s", kvmpath, strerror(errno));
	vm->fd = ioctl(vm->kvm, KVM_CREATE_VM, 0);
	if (vm->fd < 0)
		die("KVM_CREATE_VM: %s", strerror(errno));
	struct kvm_userspace_memory_region region = {.slot = 0, .guest_phys_addr = 0, .memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)vm->mem};
	xioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");
	struct kvm_enable_cap cap = {.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args = {KVM_MSR_EXIT_REASON_INVAL | KVM_MSR_EXIT_REASON_UNKNOWN | KVM_MSR_EXIT_REASON_FILTER}};
	xioctl(vm->fd, KVM_ENABLE_CAP, &cap, "KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR)");
	vm->runsize = ioctl(vm->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->runsize < (int)sizeof(struct kvm_run))
		die("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
}

int floor_vcpu_create(struct floor_vm *vm, int id, const struct kvm_regs *regs, struct kvm_run **run)
{
	int cpu = ioctl(vm->fd, KVM_CREATE_VCPU, id);
	if (cpu < 0)
		die("KVM_CREATE_VCPU %d: %s", id, strerror(errno));
	*run = mmap(NULL, vm->runsize, PROT_READ | PROT_WRITE, MAP_SHARED, cpu, 0);
	if (*run == MAP_FAILED)
		die("mmap kvm_run: %s", strerror(errno));

	/* CPUID as KVM supports it: the guest loops need none, but a vCPU
	 * without CPUID set is not one anybody runs. */
	struct {
		struct kvm_cpuid2 c;
		struct kvm_cpuid_entry2 e[256];
	} cpuid = {.c.nent = 256};
	xioctl(vm->kvm, KVM_GET_SUPPORTED_CPUID, &cpuid, "KVM_GET_SUPPORTED_CPUID");
	xioctl(cpu, KVM_SET_CPUID2, &cpuid, "KVM_SET_CPUID2");

	struct kvm_sregs sregs;
	xioctl(cpu, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	flat(&sregs.cs, 0x08, 0xb);
	flat(&sregs.ds, 0x10, 0x3);
	sregs.es = sregs.ss = sregs.fs = sregs.gs = sregs.ds;
	sregs.cr0 = 0x11; /* PE, ET */
	xioctl(cpu, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
	xioctl(cpu, KVM_SET_REGS, (void *)regs, "KVM_SET_REGS");
	return cpu;
}
