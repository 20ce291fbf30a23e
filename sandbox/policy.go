// Package sandbox confines a running govmm, as Firecracker's jailer and
// seccomp filters confine its VMM: once the VM is built (guest RAM mapped,
// /dev/kvm and the vCPUs open, disk images and eventfds open, the
// dashboard listening), nothing the run loop, the devices, the dashboard
// or the report does needs to open a file, make a socket, start a program
// or change credentials. A guest that got code execution inside govmm
// would want exactly those. Install puts a seccomp allowlist of what a
// built VM does need on every thread (TSYNC), with no_new_privs, after
// optionally dropping to an unprivileged user; every other system call
// fails with EPERM, which the Go code that made it reports as an error.
//
// The filter is assembled by github.com/elastic/go-seccomp-bpf (a
// maintained library, not hand-written BPF). The list below was taken
// from what govmm's threads call when traced (strace -f) through a
// bare-metal run with the dashboard and a Linux boot with a disk, the
// virtio console and console input, each entry with the reason it is
// needed.
package sandbox

import (
	"github.com/govmm/govmm/kvm"
	"golang.org/x/sys/unix"
)

// Syscall is one allowed system call and why a built VM needs it.
type Syscall struct {
	Name string
	Why  string
}

// Allowed is the allowlist, grouped by who needs it.
var Allowed = []Syscall{
	// KVM: KVM_RUN, KVM_INTERRUPT, register and event get/set, KVM_IOEVENTFD
	// as BARs move, the statistics fd; and the terminal's mode (TCGETS,
	// TCSETS) when console input ends.
	{"ioctl", "only with the request numbers of RunningIoctls: the KVM calls a built VM makes (KVM_RUN, KVM_INTERRUPT, KVM_IOEVENTFD, ...; not KVM_CREATE_VCPU, KVM_SET_USER_MEMORY_REGION, KVM_SET_CPUID2, KVM_X86_SET_MSR_FILTER) and the terminal's mode"},
	{"tgkill", "kicking a vCPU thread out of KVM_RUN (vcpu/kick.go); the Go runtime's preemption signals; only to govmm's own threads (argument 0 must be govmm's PID)"},
	{"getpid", "tgkill's process ID; the Go runtime"},
	{"gettid", "the Go runtime's thread identity"},

	// Devices: virtio-blk's I/O, flushes and the queues' eventfds; the
	// console and its input; reading the KVM statistics fd.
	{"read", "console input, eventfds (queue notifies), the KVM statistics fd"},
	{"write", "the console, eventfds, the report"},
	{"readv", "Go's I/O"},
	{"writev", "Go's I/O"},
	{"pread64", "virtio-blk, the KVM statistics fd"},
	{"pwrite64", "virtio-blk"},
	{"preadv", "virtio-blk reads (one call per request)"},
	{"pwritev", "virtio-blk writes"},
	{"preadv2", "virtio-blk reads (x/sys may use the v2 call)"},
	{"pwritev2", "virtio-blk writes"},
	{"fdatasync", "virtio-blk flush (VIRTIO_BLK_T_FLUSH)"},
	{"fsync", "virtio-blk flush; a snapshot's files"},
	{"ftruncate", "a snapshot's sparse memory file, its size set (the file opened before the filter: snapshot.Prepare)"},
	{"lseek", "Go's file I/O"},
	{"eventfd2", "a virtio queue's notify eventfd, made when the driver activates the device (virtio/kick.go)"},
	{"fcntl", "duplicating an eventfd for KVM_IOEVENTFD; Go's non-blocking fds"},
	{"close", "eventfds of a reset device; connections"},
	{"fstat", "Go's os.File"},
	{"newfstatat", "Go's os.File"},

	// The dashboard (its socket is listening before Install) and /metrics.
	{"accept4", "dashboard connections"},
	{"setsockopt", "dashboard connections (TCP keep-alive, no delay)"},
	{"getsockopt", "dashboard connections"},
	{"getsockname", "dashboard connections"},
	{"getpeername", "dashboard connections"},
	{"recvfrom", "dashboard connections"},
	{"sendto", "dashboard connections"},
	{"recvmsg", "dashboard connections"},
	{"sendmsg", "dashboard connections"},
	{"shutdown", "dashboard connections"},

	// The Go runtime: memory, threads, scheduling, signals, the poller,
	// timers.
	{"mmap", "the Go heap; never executable (PROT_EXEC is refused: nothing in govmm maps code once it runs)"},
	{"munmap", "the Go heap"},
	{"madvise", "the Go heap (returning memory)"},
	{"mprotect", "the Go runtime; never to executable (PROT_EXEC is refused)"},
	{"brk", "the Go runtime"},
	{"clone", "new OS threads (a vCPU thread is locked to its goroutine; a blocked syscall's M)"},
	{"clone3", "new OS threads"},
	{"set_robust_list", "new OS threads"},
	{"rseq", "new OS threads (glibc, when cgo is in)"},
	{"exit", "a thread's end"},
	{"exit_group", "the process's end"},
	{"futex", "the Go runtime's locks and sleeps"},
	{"nanosleep", "the Go runtime (usleep)"},
	{"clock_nanosleep", "the Go runtime"},
	{"clock_gettime", "the clock where the vDSO falls back"},
	{"gettimeofday", "the clock where the vDSO falls back"},
	{"sched_yield", "the Go runtime (osyield)"},
	{"sched_getaffinity", "the Go runtime"},
	{"sched_setaffinity", "--cpu-affinity: each vCPU thread pins itself as it starts"},
	{"getrandom", "the Go runtime and crypto (the dashboard's HTTP)"},
	{"rt_sigaction", "the Go runtime's and os/signal's handlers"},
	{"rt_sigprocmask", "the Go runtime (new threads, signal masks)"},
	{"rt_sigreturn", "returning from every signal handler"},
	{"sigaltstack", "the Go runtime's signal stacks"},
	{"restart_syscall", "a system call interrupted by a signal"},
	{"epoll_create1", "the Go poller"},
	{"epoll_ctl", "the Go poller (eventfds, connections)"},
	{"epoll_pwait", "the Go poller"},
	{"epoll_wait", "the Go poller"},
	{"uname", "the Go runtime"},
	{"prlimit64", "the Go runtime"},
}

// Forbidden is a sample of what the allowlist refuses, and why each would
// be wanted by a guest that broke into govmm; the tests check each.
var Forbidden = []Syscall{
	{"openat", "read or write host files"},
	{"socket", "reach the network or other local services"},
	{"connect", "reach the network or other local services"},
	{"execve", "run a program"},
	{"ptrace", "attach to other processes"},
	{"setuid", "change credentials"},
	{"mount", "change the file system"},
	{"kill", "signal other processes (tgkill is allowed only with govmm's own PID)"},
}

// RunningIoctls are the ioctl request numbers the filter lets through: the
// KVM requests a built VM makes (kvm.Ioctls marked running, each with its
// reason there; the build-only ones, which would let a compromised govmm
// add vCPUs, remap guest memory or rewrite the MSR filter, are refused),
// and the terminal's mode, restored when console input ends.
func RunningIoctls() []kvm.Ioctl {
	var out []kvm.Ioctl
	for _, i := range kvm.Ioctls {
		if i.Running {
			out = append(out, i)
		}
	}
	return append(out,
		kvm.Ioctl{Name: "TCGETS", Request: unix.TCGETS, Running: true, Why: "the terminal's mode, read as console input ends"},
		kvm.Ioctl{Name: "TCSETS", Request: unix.TCSETS, Running: true, Why: "the terminal's mode, restored as console input ends"})
}
