/* floorvmm: the floor of a user-space exit on this host. A VMM with
 * nothing in it: one vCPU, 2 MiB of RAM holding floorloop.bin at 0x1000,
 * flat 32-bit protected mode, no in-kernel irqchip (as govmm), MSR exits to
 * user space for the same reasons govmm asks for (KVM_CAP_X86_USER_SPACE_MSR:
 * invalid, unknown, filter). Its run loop is KVM_RUN and a switch on the
 * exit reason that answers the exit (reads all ones, MSR writes accepted)
 * and nothing else: whatever govmm's exits cost above this is govmm's own.
 *
 *   floorvmm [-k /dev/kvm] BLOB KIND COUNT
 *
 * KIND: port, mmio or msr (floorloop.S). Prints one line,
 *   floor kind=KIND count=COUNT cycles=T exits=E
 * T being the guest's TSC cycles over the loop, E the exits of that kind
 * the loop took. Any failure is one line on stderr and exit status 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define MEM_SIZE  (2u << 20)
#define LOAD_AT   0x1000u
#define STACK_TOP (MEM_SIZE - 16)

static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("floorvmm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static int xioctl(int fd, unsigned long req, void *arg, const char *what)
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

int main(int argc, char **argv)
{
	const char *kvmpath = "/dev/kvm";
	if (argc > 2 && strcmp(argv[1], "-k") == 0)
		kvmpath = argv[2], argc -= 2, argv += 2;
	if (argc != 4)
		die("usage: floorvmm [-k /dev/kvm] BLOB port|mmio|msr COUNT");
	int kind = strcmp(argv[2], "port") == 0 ? 0 : strcmp(argv[2], "mmio") == 0 ? 1 : strcmp(argv[2], "msr") == 0 ? 2 : -1;
	if (kind < 0)
		die("kind %s: want port, mmio or msr", argv[2]);
	char *end;
	unsigned long count = strtoul(argv[3], &end, 10);
	if (*end || count == 0 || count > 0xffffffffUL)
		die("count %s: want 1 to 4294967295", argv[3]);

	int blob = open(argv[1], O_RDONLY);
	if (blob < 0)
		die("%s: %s", argv[1], strerror(errno));
	uint8_t *mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED)
		die("guest memory: %s", strerror(errno));
	ssize_t n = read(blob, mem + LOAD_AT, MEM_SIZE - LOAD_AT - 4096);
	if (n <= 0)
		die("%s: empty or unreadable", argv[1]);
	close(blob);

	int kvm = open(kvmpath, O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("%s: %s", kvmpath, strerror(errno));
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM: %s", strerror(errno));
	struct kvm_userspace_memory_region region = {.slot = 0, .guest_phys_addr = 0, .memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)mem};
	xioctl(vm, KVM_SET_USER_MEMORY_REGION, &region, "KVM_SET_USER_MEMORY_REGION");
	struct kvm_enable_cap cap = {.cap = KVM_CAP_X86_USER_SPACE_MSR,
		.args = {KVM_MSR_EXIT_REASON_INVAL | KVM_MSR_EXIT_REASON_UNKNOWN | KVM_MSR_EXIT_REASON_FILTER}};
	xioctl(vm, KVM_ENABLE_CAP, &cap, "KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR)");
	int cpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (cpu < 0)
		die("KVM_CREATE_VCPU: %s", strerror(errno));
	int runsize = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (runsize < (int)sizeof(struct kvm_run))
		die("KVM_GET_VCPU_MMAP_SIZE: %s", strerror(errno));
	struct kvm_run *run = mmap(NULL, runsize, PROT_READ | PROT_WRITE, MAP_SHARED, cpu, 0);
	if (run == MAP_FAILED)
		die("mmap kvm_run: %s", strerror(errno));

	/* CPUID as KVM supports it: the guest loop needs none, but a vCPU
	 * without CPUID set is not one anybody runs. */
	struct {
		struct kvm_cpuid2 c;
		struct kvm_cpuid_entry2 e[256];
	} cpuid = {.c.nent = 256};
	xioctl(kvm, KVM_GET_SUPPORTED_CPUID, &cpuid, "KVM_GET_SUPPORTED_CPUID");
	xioctl(cpu, KVM_SET_CPUID2, &cpuid, "KVM_SET_CPUID2");

	struct kvm_sregs sregs;
	xioctl(cpu, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	flat(&sregs.cs, 0x08, 0xb);
	flat(&sregs.ds, 0x10, 0x3);
	sregs.es = sregs.ss = sregs.fs = sregs.gs = sregs.ds;
	sregs.cr0 = 0x11; /* PE, ET */
	xioctl(cpu, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
	struct kvm_regs regs = {.rip = LOAD_AT, .rsp = STACK_TOP, .rflags = 2, .rax = (unsigned)kind, .rcx = count};
	xioctl(cpu, KVM_SET_REGS, &regs, "KVM_SET_REGS");

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
			printf("floor kind=%s count=%lu cycles=%llu exits=%lu\n", argv[2], count,
			       (unsigned long long)((regs.rdx & 0xffffffff) << 32 | (regs.rax & 0xffffffff)), exits);
			return 0;
		default:
			die("unexpected exit reason %u", run->exit_reason);
		}
	}
}
