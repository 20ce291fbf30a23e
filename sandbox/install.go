package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"syscall"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/govmm/govmm/kvm"
	"golang.org/x/sys/unix"
)

// Options say how far Install confines govmm.
type Options struct {
	// User, if set, is the account govmm drops to (groups, GID, then UID,
	// on every thread) before the filter: the user the VM keeps running
	// as, with the files it already has open.
	User string
}

// Report is what Install did, for the one line govmm prints.
type Report struct {
	Allowed int    // system calls on the allowlist
	User    string // the user dropped to, "" for none
	// Probe is the forbidden system call Install made once the filter was
	// on, and what came back: the filter is checked, not assumed.
	Probe string
}

// String is the report's one line.
func (r Report) String() string {
	s := fmt.Sprintf("seccomp allowlist of %d system calls on every thread, the rest refused with EPERM; %s", r.Allowed, r.Probe)
	if r.User != "" {
		s += "; running as " + r.User
	}
	return s
}

// Install confines the calling process: every thread, from now on, may
// make only the Allowed system calls. It must run after everything that
// opens files, sockets or devices. It is not undone: a process that
// installed it stays confined until it exits.
func Install(o Options) (Report, error) {
	var r Report
	// Resolved now: time.Local reads /etc/localtime on first use, which
	// the filter would refuse later (with no error to see: UTC instead).
	_ = time.Local.String()
	if o.User != "" {
		if err := dropTo(o.User); err != nil {
			return r, err
		}
		r.User = o.User
	}
	policy, err := policy()
	if err != nil {
		return r, err
	}
	f := seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: policy}
	if err := seccomp.LoadFilter(f); err != nil {
		return r, fmt.Errorf("sandbox: %w", err)
	}
	r.Allowed = len(Allowed)
	// The probe: a socket the filter must refuse.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
		return r, errors.New("sandbox: the seccomp filter is loaded but a socket(2) call still succeeded")
	}
	if !errors.Is(err, unix.EPERM) {
		return r, fmt.Errorf("sandbox: socket(2) under the filter failed with %v, want EPERM", err)
	}
	r.Probe = "probe socket(2) refused: " + err.Error()
	probe, err := probeIoctls()
	if err != nil {
		return r, err
	}
	r.Probe += "; " + probe
	return r, nil
}

// probeIoctls checks the ioctl half of the filter on a descriptor that
// cannot exist (-1): a request the filter lets through reaches the kernel,
// which answers EBADF; one it refuses never does, and comes back EPERM.
// KVM_RUN must get through; KVM_CREATE_VCPU, which would add a vCPU to a
// running VM, must not.
func probeIoctls() (string, error) {
	for _, c := range []struct {
		name string
		want unix.Errno
	}{{"KVM_RUN", unix.EBADF}, {"KVM_CREATE_VCPU", unix.EPERM}} {
		req, _ := kvm.IoctlNamed(c.name)
		_, _, e := unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), req, 0)
		if e != c.want {
			return "", fmt.Errorf("sandbox: ioctl(-1, %s) under the filter: %v, want %v", c.name, e, c.want)
		}
	}
	return fmt.Sprintf("ioctl limited to %d request numbers (probe KVM_CREATE_VCPU refused, KVM_RUN let through)", len(RunningIoctls())), nil
}

// policy is the allowlist as the filter library takes it, in the order
// the filter tests them (it is a linear list of comparisons, run at every
// system call): ioctl first with its request numbers, KVM_RUN the first
// of them, since every exit makes one; then the calls a running VM makes
// most; tgkill only to govmm's own process; mmap and mprotect never
// executable; the rest by name.
func policy() (seccomp.Policy, error) {
	var ioctls []seccomp.NameWithConditions
	for _, i := range RunningIoctls() {
		ioctls = append(ioctls, seccomp.NameWithConditions{Name: "ioctl",
			Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: uint64(i.Request)}}})
	}
	noExec := seccomp.ArgumentConditions{{Argument: 2, Operation: seccomp.BitsNotSet, Value: unix.PROT_EXEC}}
	others := []seccomp.NameWithConditions{
		{Name: "tgkill", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: uint64(os.Getpid())}}},
		{Name: "mmap", Conditions: noExec},
		{Name: "mprotect", Conditions: noExec},
	}
	names := slices.Clone(hot)
	for _, s := range Allowed {
		conditional := s.Name == "ioctl" ||
			slices.ContainsFunc(others, func(c seccomp.NameWithConditions) bool { return c.Name == s.Name })
		if !conditional && !slices.Contains(hot, s.Name) {
			names = append(names, s.Name)
		}
	}
	p := seccomp.Policy{
		DefaultAction: seccomp.ActionErrno,
		Syscalls: []seccomp.SyscallGroup{
			{Action: seccomp.ActionAllow, NamesWithCondtions: ioctls},
			{Action: seccomp.ActionAllow, Names: names},
			{Action: seccomp.ActionAllow, NamesWithCondtions: others},
		},
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("sandbox: %w", err)
	}
	return p, nil
}

// hot are the system calls a running VM makes most after KVM_RUN's ioctl
// (the vCPU threads' futexes and the console's and eventfds' reads and
// writes), tested right after ioctl.
var hot = []string{"futex", "write", "read", "epoll_pwait", "nanosleep", "sched_yield"}

// dropTo makes every thread run as name: its supplementary groups cleared,
// its primary group and user ID set (Go's syscall package applies each to
// all threads).
func dropTo(name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("sandbox: --user %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("sandbox: --user %s: not a numeric UID/GID (%s/%s)", name, u.Uid, u.Gid)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("sandbox: --user %s: setgroups: %w", name, err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("sandbox: --user %s: setgid(%d): %w", name, gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("sandbox: --user %s: setuid(%d): %w", name, uid, err)
	}
	return nil
}
