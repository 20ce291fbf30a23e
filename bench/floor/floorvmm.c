/* floorvmm: the floor of a user-space exit, and of a user-space IPI, on
 * this host. A VMM with nothing in it: 2 MiB of RAM holding a flat blob at
 * 0x1000, flat 32-bit protected mode, no in-kernel irqchip (as govmm), MSR
 * exits to user space for the same reasons govmm asks for (floorvm.c).
 * Whatever govmm's exits and IPIs cost above this is govmm's own.
 *
 *   floorvmm [-k /dev/kvm] [-c CPU,...] BLOB KIND COUNT [GAP]
 *
 * -c pins vCPU i's thread to the i-th CPU of the list (modulo its length),
 * as govmm's --cpu-affinity does.
 *
 * KIND port, mmio or msr: the exit floor. BLOB is floorloop.bin, one vCPU;
 * the run loop is KVM_RUN and a switch on the exit reason that answers the
 * exit (reads all ones, MSR writes accepted) and nothing else. One line:
 *   floor kind=KIND count=COUNT cycles=T exits=E
 * T being the guest's TSC cycles over the loop, E the exits of that kind
 * the loop took.
 *
 * KIND ipi-x2apic or ipi-xapic: the IPI floor (flooripi.c). BLOB is
 * rttloop.bin, two vCPUs, COUNT round trips per receiver, GAP (default
 * 100000) TSC cycles between them; two lines, halted then spinning
 * receiver (flooripi.c says what they hold).
 *
 * Any failure is one line on stderr and exit status 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "floor.h"

static int exit_floor(struct floor_vm *vm, const char *name, int kind, unsigned long count)
{
	struct kvm_run *run;
	struct kvm_regs regs = {.rip = LOAD_AT, .rsp = STACK_TOP, .rflags = 2, .rax = (unsigned)kind, .rcx = count};
	int cpu = floor_vcpu_create(vm, 0, &regs, &run);
	unsigned long exits = 0;
	for (;;) {
		if (ioctl(cpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR)
				continue;
			die("KVM_RUN: %s", strerror(errno));
		}
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			if (run->io.direction == KVM_EXIT_IO_IN)
				memset((uint8_t *)run + run->io.data_offset, 0xff, run->io.size * run->io.count);
			exits += kind == 0;
			break;
		case KVM_EXIT_MMIO:
			if (!run->mmio.is_write)
				memset(run->mmio.data, 0xff, run->mmio.len);
			exits += kind == 1;
			break;
		case KVM_EXIT_X86_WRMSR:
			run->msr.error = 0;
			exits += kind == 2;
			break;
		case KVM_EXIT_X86_RDMSR:
			run->msr.data = 0, run->msr.error = 0;
			break;
		case KVM_EXIT_HLT:
			xioctl(cpu, KVM_GET_REGS, &regs, "KVM_GET_REGS");
			printf("floor kind=%s count=%lu cycles=%llu exits=%lu\n", name, count,
			       (unsigned long long)((regs.rdx & 0xffffffff) << 32 | (regs.rax & 0xffffffff)), exits);
			return 0;
		default:
			die("unexpected exit reason %u", run->exit_reason);
		}
	}
}

static unsigned long number(const char *s, const char *what, unsigned long lo)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (*s == '-' || *end || errno || v < lo || v > 0xffffffffUL)
		die("%s %s: want %lu to 4294967295", what, s, lo);
	return v;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = {"port", "mmio", "msr", "ipi-x2apic", "ipi-xapic"};
	const char *kvmpath = "/dev/kvm", *affinity = NULL;
	while (argc > 2 && (strcmp(argv[1], "-k") == 0 || strcmp(argv[1], "-c") == 0)) {
		if (argv[1][1] == 'k')
			kvmpath = argv[2];
		else
			affinity = argv[2];
		argc -= 2, argv += 2;
	}
	if (argc != 4 && argc != 5)
		die("usage: floorvmm [-k /dev/kvm] [-c CPU,...] BLOB port|mmio|msr|ipi-x2apic|ipi-xapic COUNT [GAP]");
	int kind = -1;
	for (int i = 0; i < 5; i++)
		if (strcmp(argv[2], kinds[i]) == 0)
			kind = i;
	if (kind < 0)
		die("kind %s: want port, mmio, msr, ipi-x2apic or ipi-xapic", argv[2]);
	unsigned long count = number(argv[3], "count", 1);
	if (argc == 5 && kind < 3)
		die("GAP is for the ipi kinds only");
	unsigned long gap = argc == 5 ? number(argv[4], "gap", 0) : 100000;

	struct floor_vm vm;
	floor_vm_create(&vm, kvmpath, argv[1]);
	if (affinity)
		floor_parse_affinity(affinity);
	if (kind >= 3)
		return floor_ipi(&vm, argv[2], kind - 3, count, gap);
	floor_pin(0);
	return exit_floor(&vm, argv[2], kind, count);
}
