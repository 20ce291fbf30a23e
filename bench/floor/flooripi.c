/* The IPI floor: the least a local APIC in user space must do for one
 * cross-CPU IPI, in C with plain threads, one per vCPU. The guest is
 * rttloop.bin (guest/baremetal/rttloop.S), the same round-trip code govmm's
 * rtt.elf runs: vCPU 0 sends fixed IPIs to vCPU 1 and times them, vCPU 1
 * halts or spins between them and its handler EOIs.
 *
 * The path, step for step the one govmm's APIC takes:
 *   - the sender's ICR write exits (x2APIC: WRMSR 0x830; xAPIC: MMIO writes
 *     of ICR2 then ICR); its thread sets the vector in the target's IRR
 *     and then wakes the target: a FUTEX_WAKE on the target's state word
 *     when it is halted, immediate_exit and a tgkill when it is in
 *     KVM_RUN, nothing when it is in the VMM (it looks before it enters);
 *   - the target's thread, back from its HLT wait or its kicked KVM_RUN,
 *     injects the highest vector with KVM_INTERRUPT when KVM says the
 *     guest can take one (else it asks for the interrupt window), moving it
 *     from IRR to ISR;
 *   - the guest's EOI exit (x2APIC WRMSR 0x80B, xAPIC MMIO write) clears
 *     the highest ISR bit.
 * The halt and kick protocol: the target publishes its state (GUEST
 * before its last look at IRR and KVM_RUN, HALTED before its last look and
 * its futex wait), the sender sets IRR before it reads the state; both are
 * sequentially consistent atomics, so one of the two always sees the other.
 * Physical destinations only, fixed delivery only: what rttloop.S sends.
 *
 * Output, one line per receiver (the BSP reports each section with HLT):
 *   floor-ipi kind=K receiver=halted|spinning rounds=N gap=G cycles=T
 *     min=A max=B sender_exits=S receiver_exits=R kicks=C wakeups=W windows=I median=M
 * T the guest's TSC cycles over the N round trips; the exits are those of
 * the section (port 0x660 marks it, as under govmm), the receiver's kicks
 * those that ended a KVM_RUN, its wake-ups those from a futex wait, its
 * windows the interrupt-window exits it asked for, M the median round trip
 * (rttloop.S stores each one's cycles at FLOOR_SAMPLES). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "floor.h"

#define NCPUS       2
#define AP_ENTRY    (LOAD_AT + 16)
#define SECTION     0x660
#define MSR_ICR     0x830
#define MSR_EOI     0x80B
#define XAPIC       0xFEE00000u
#define KICK_SIGNAL SIGUSR1

enum state { VMM, GUEST, HALTED };

/* The counts a section reports, per vCPU; written by the vCPU's thread,
 * read by the BSP's at section ends. */
struct counts {
	_Atomic unsigned long exits, kicks, wakeups, windows;
};

struct vcpu {
	int id, fd;
	struct kvm_run *run;
	pthread_t thread;
	_Atomic pid_t tid;
	/* state is where the thread is (enum state) and the futex word a
	 * halted thread sleeps on; the thread writes it, and a sender moves
	 * it from HALTED to VMM when it wakes the thread. */
	_Atomic uint32_t state;
	/* irr: set by senders, taken by the vCPU's thread. */
	_Atomic uint32_t irr[8];
	/* kick_pending: one kick per KVM_RUN; set by a sender, cleared by the
	 * vCPU's thread after each exit. */
	_Atomic uint32_t kick_pending;
	uint32_t isr[8], icr2; /* the vCPU's thread only */
	struct counts n;
};

static struct floor_vm *vm;
static struct vcpu cpus[NCPUS];
static const char *kind_name;
static unsigned long rounds, gap;
static _Atomic int done;

static long futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

static int highest(const uint32_t *bits, int atomic)
{
	for (int i = 7; i >= 0; i--) {
		uint32_t w = atomic ? atomic_load((_Atomic uint32_t *)&bits[i]) : bits[i];
		if (w)
			return i * 32 + 31 - __builtin_clz(w);
	}
	return -1;
}

/* notify is the sender's half: the target has a new IRR bit. */
static void notify(struct vcpu *t)
{
	uint32_t s = atomic_load(&t->state);
	if (s == HALTED) {
		if (atomic_compare_exchange_strong(&t->state, &s, VMM))
			futex(&t->state, FUTEX_WAKE_PRIVATE, 1);
	} else if (s == GUEST && !atomic_exchange(&t->kick_pending, 1)) {
		t->run->immediate_exit = 1;
		if (syscall(SYS_tgkill, getpid(), atomic_load(&t->tid), KICK_SIGNAL) < 0)
			die("tgkill: %s", strerror(errno));
	}
}

static void deliver(uint32_t dest, uint32_t icr)
{
	uint32_t vec = icr & 0xff;
	if (dest >= NCPUS || vec < 16 || (icr & 0x700) != 0)
		die("ICR %#x to %u: the floor sends fixed IPIs to APIC IDs 0-%d", icr, dest, NCPUS - 1);
	struct vcpu *t = &cpus[dest];
	atomic_fetch_or(&t->irr[vec / 32], 1u << vec % 32);
	notify(t);
}

static void eoi(struct vcpu *v)
{
	int vec = highest(v->isr, 0);
	if (vec >= 0)
		v->isr[vec / 32] &= ~(1u << vec % 32);
}

/* inject moves the highest IRR vector to ISR with KVM_INTERRUPT when the
 * guest can take it (and no vector of its priority class or above is in
 * service), else asks for the interrupt window if one is pending. */
static void inject(struct vcpu *v)
{
	int vec = highest((uint32_t *)v->irr, 1);
	v->run->request_interrupt_window = 0;
	if (vec < 0 || highest(v->isr, 0) >> 4 >= vec >> 4)
		return;
	if (!v->run->ready_for_interrupt_injection) {
		v->run->request_interrupt_window = 1;
		return;
	}
	atomic_fetch_and(&v->irr[vec / 32], ~(1u << vec % 32));
	v->isr[vec / 32] |= 1u << vec % 32;
	struct kvm_interrupt irq = {.irq = (uint32_t)vec};
	xioctl(v->fd, KVM_INTERRUPT, &irq, "KVM_INTERRUPT");
}

/* halt waits for an IRR bit (the guest halts with IF set) or the end. */
static void halt(struct vcpu *v)
{
	int slept = 0;
	atomic_store(&v->state, HALTED);
	while (highest((uint32_t *)v->irr, 1) < 0 && !atomic_load(&done)) {
		futex(&v->state, FUTEX_WAIT_PRIVATE, HALTED);
		slept = 1;
	}
	atomic_store(&v->state, VMM);
	if (slept)
		atomic_fetch_add(&v->n.wakeups, 1);
}

static struct counts_snap {
	unsigned long exits[NCPUS], kicks, wakeups, windows;
} at_start;

static void snap(struct counts_snap *s)
{
	for (int i = 0; i < NCPUS; i++)
		s->exits[i] = atomic_load(&cpus[i].n.exits);
	s->kicks = atomic_load(&cpus[1].n.kicks);
	s->wakeups = atomic_load(&cpus[1].n.wakeups);
	s->windows = atomic_load(&cpus[1].n.windows);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* median is the middle of the section's round trips (the lower of the
 * two for an even count), from the cycles rttloop.S stored. */
static uint32_t median(void)
{
	unsigned long n = rounds < FLOOR_SAMPLES_CAP ? rounds : FLOOR_SAMPLES_CAP;
	uint32_t *s = (uint32_t *)(vm->mem + FLOOR_SAMPLES);
	qsort(s, n, sizeof *s, cmp_u32);
	return s[(n - 1) / 2];
}

/* report is the BSP's HLT: EBX = 1 halted, 2 spinning, 0 done. */
static int report(struct vcpu *v)
{
	struct kvm_regs regs;
	xioctl(v->fd, KVM_GET_REGS, &regs, "KVM_GET_REGS");
	if ((regs.rbx & 0xffffffff) == 0)
		return 1;
	struct counts_snap now;
	snap(&now);
	printf("floor-ipi kind=%s receiver=%s rounds=%lu gap=%lu cycles=%llu min=%u max=%u "
	       "sender_exits=%lu receiver_exits=%lu kicks=%lu wakeups=%lu windows=%lu median=%u\n",
	       kind_name, regs.rbx == 1 ? "halted" : "spinning", rounds, gap,
	       (unsigned long long)((regs.rdx & 0xffffffff) << 32 | (regs.rax & 0xffffffff)),
	       (unsigned)regs.rsi, (unsigned)regs.rdi, now.exits[0] - at_start.exits[0],
	       now.exits[1] - at_start.exits[1], now.kicks - at_start.kicks, now.wakeups - at_start.wakeups,
	       now.windows - at_start.windows, median());
	fflush(stdout);
	return 0;
}

/* exit handles one exit; it returns 1 when the VM is done. Section
 * markers and the BSP's reports are not counted as exits. */
static int handle_exit(struct vcpu *v)
{
	struct kvm_run *run = v->run;
	switch (run->exit_reason) {
	case KVM_EXIT_X86_WRMSR:
		run->msr.error = 0;
		if (run->msr.index == MSR_ICR)
			deliver((uint32_t)(run->msr.data >> 32), (uint32_t)run->msr.data);
		else if (run->msr.index == MSR_EOI)
			eoi(v);
		break;
	case KVM_EXIT_X86_RDMSR:
		run->msr.data = 0, run->msr.error = 0;
		break;
	case KVM_EXIT_MMIO: {
		uint32_t val = 0;
		if (!run->mmio.is_write) {
			memset(run->mmio.data, 0, run->mmio.len); /* ICR: delivery status idle */
			break;
		}
		memcpy(&val, run->mmio.data, run->mmio.len < 4 ? run->mmio.len : 4);
		if (run->mmio.phys_addr == XAPIC + 0x310)
			v->icr2 = val;
		else if (run->mmio.phys_addr == XAPIC + 0x300)
			deliver(v->icr2 >> 24, val);
		else if (run->mmio.phys_addr == XAPIC + 0x0B0)
			eoi(v);
		break;
	}
	case KVM_EXIT_IO:
		if (run->io.port == SECTION && run->io.direction == KVM_EXIT_IO_OUT) {
			uint32_t sec;
			memcpy(&sec, (uint8_t *)run + run->io.data_offset, 4);
			if (sec != 0)
				snap(&at_start);
			return 0;
		}
		break;
	case KVM_EXIT_HLT:
		if (v->id == 0)
			return report(v);
		halt(v);
		break;
	case KVM_EXIT_IRQ_WINDOW_OPEN:
		atomic_fetch_add(&v->n.windows, 1);
		break;
	default:
		die("vCPU %d: unexpected exit reason %u", v->id, run->exit_reason);
	}
	atomic_fetch_add(&v->n.exits, 1);
	return 0;
}

static void *vcpu_loop(void *arg)
{
	struct vcpu *v = arg;
	atomic_store(&v->tid, (pid_t)syscall(SYS_gettid));
	floor_pin(v->id);
	while (!atomic_load(&done)) {
		inject(v);
		atomic_store(&v->state, GUEST);
		/* The last look: a sender that set IRR before this saw VMM and
		 * did not kick; one after it sees GUEST and kicks. */
		if (!v->run->request_interrupt_window && highest((uint32_t *)v->irr, 1) >= 0 &&
		    v->run->ready_for_interrupt_injection && highest(v->isr, 0) < 0) {
			atomic_store(&v->state, VMM);
			continue;
		}
		int r = ioctl(v->fd, KVM_RUN, 0);
		int err = errno;
		atomic_store(&v->state, VMM);
		if (atomic_exchange(&v->kick_pending, 0))
			v->run->immediate_exit = 0;
		if (r < 0) {
			if (err != EINTR)
				die("vCPU %d: KVM_RUN: %s", v->id, strerror(err));
			atomic_fetch_add(&v->n.kicks, 1);
			atomic_fetch_add(&v->n.exits, 1);
			continue;
		}
		if (handle_exit(v)) {
			atomic_store(&done, 1);
			for (int i = 0; i < NCPUS; i++)
				if (&cpus[i] != v)
					notify(&cpus[i]);
		}
	}
	return NULL;
}

static void on_kick(int sig) { (void)sig; }

int floor_ipi(struct floor_vm *v, const char *name, int kind, unsigned long n, unsigned long g)
{
	vm = v, kind_name = name, rounds = n, gap = g;
	struct sigaction sa = {.sa_handler = on_kick}; /* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	if (sigaction(KICK_SIGNAL, &sa, NULL) < 0)
		die("sigaction: %s", strerror(errno));
	for (int i = 0; i < NCPUS; i++) {
		struct kvm_regs regs = {.rip = i == 0 ? LOAD_AT : AP_ENTRY, .rsp = STACK_TOP - i * 0x10000u,
			.rflags = 2, .rax = (unsigned)kind, .rcx = n, .rdx = g};
		cpus[i].id = i;
		cpus[i].fd = floor_vcpu_create(vm, i, &regs, &cpus[i].run);
	}
	for (int i = 0; i < NCPUS; i++)
		if ((errno = pthread_create(&cpus[i].thread, NULL, vcpu_loop, &cpus[i])) != 0)
			die("pthread_create: %s", strerror(errno));
	for (int i = 0; i < NCPUS; i++)
		pthread_join(cpus[i].thread, NULL);
	return 0;
}
