package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/govmm/govmm/kvm"
	"golang.org/x/sys/unix"
)

// The filter stays on a process for good, so each check runs in a child:
// this test binary run again with helperEnv set, which installs the filter
// and prints one line per check.
const helperEnv = "GOVMM_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "cost":
		os.Exit(costHelper())
	default:
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

// forbidden makes each Forbidden call with arguments that would be
// harmless if the filter let it through (a missing path, a bad fd, signal
// 0, the UID it already has): the answer then is anything but EPERM.
var forbidden = map[string]func() error{
	"openat": func() error { _, err := unix.Open("/etc/hostname", unix.O_RDONLY, 0); return err },
	"socket": func() error { _, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0); return err },
	"connect": func() error {
		return unix.Connect(-1, &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}})
	},
	"execve": func() error { return unix.Exec("/nonexistent/govmm-sandbox-test", []string{"x"}, nil) },
	"ptrace": func() error {
		_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, 0, 0, 0, 0, 0)
		return errnoOrNil(e)
	},
	"setuid": func() error {
		_, _, e := unix.RawSyscall(unix.SYS_SETUID, uintptr(os.Getuid()), 0, 0)
		return errnoOrNil(e)
	},
	"mount": func() error { return unix.Mount("/nonexistent", "/nonexistent", "none", 0, "") },
	"kill":  func() error { return unix.Kill(os.Getpid(), 0) },
}

func errnoOrNil(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// helper is the child: install, then report each check as "name: ok" or
// "name: FAIL why".
func helper() int {
	parent := os.Getppid()
	r, err := Install(Options{})
	if err != nil {
		fmt.Println("install: FAIL", err)
		return 1
	}
	fmt.Println("report:", r)
	for name, call := range forbidden {
		if err := call(); errors.Is(err, unix.EPERM) {
			fmt.Printf("%s: ok\n", name)
		} else {
			fmt.Printf("%s: FAIL got %v, want EPERM\n", name, err)
		}
	}
	// tgkill: to govmm's own threads yes, to another process no.
	if err := unix.Tgkill(os.Getpid(), unix.Gettid(), 0); err != nil {
		fmt.Println("tgkill-own: FAIL", err)
	} else {
		fmt.Println("tgkill-own: ok")
	}
	if err := unix.Tgkill(parent, parent, 0); errors.Is(err, unix.EPERM) {
		fmt.Println("tgkill-other: ok")
	} else {
		fmt.Printf("tgkill-other: FAIL got %v, want EPERM\n", err)
	}
	// What a running VM does keeps working: new threads (goroutines
	// locked to OS threads, as vCPUs are), the heap, eventfds, writes.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			b := make([]byte, 1<<20)
			b[len(b)-1] = 1
			fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
			if err == nil {
				unix.Write(fd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
				unix.Close(fd)
			} else {
				fmt.Println("eventfd: FAIL", err)
			}
		}()
	}
	wg.Wait()
	runtime.GC()
	fmt.Println("threads: ok")
	checkIoctls()
	checkNoExec()
	return 0
}

// checkIoctls makes every KVM request on fd -1: a running one must reach
// the kernel (EBADF), a build-only one must be refused (EPERM).
func checkIoctls() {
	for _, i := range kvm.Ioctls {
		want := unix.EPERM
		if i.Running {
			want = unix.EBADF
		}
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), i.Request, 0); e != want {
			fmt.Printf("ioctl %s: FAIL got %v, want %v\n", i.Name, e, want)
		}
	}
	fmt.Println("ioctls: ok")
}

// checkNoExec: memory can be mapped and protected read-write, never
// executable.
func checkNoExec() {
	b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		fmt.Println("mmap-rw: FAIL", err)
		return
	}
	defer unix.Munmap(b)
	if _, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANON); !errors.Is(err, unix.EPERM) {
		fmt.Printf("mmap-exec: FAIL got %v, want EPERM\n", err)
	}
	if err := unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC); !errors.Is(err, unix.EPERM) {
		fmt.Printf("mprotect-exec: FAIL got %v, want EPERM\n", err)
	}
	if err := unix.Mprotect(b, unix.PROT_READ); err != nil {
		fmt.Println("mprotect-ro: FAIL", err)
	}
	fmt.Println("noexec: ok")
}

// TestInstall: under the filter each forbidden call is refused with EPERM
// (and Install's own probe says so in its one line), govmm's own signals
// and what a running VM needs still work.
func TestInstall(t *testing.T) {
	if !strings.Contains(readStatus(t), "Seccomp:") {
		t.Skip("SKIP: this kernel has no seccomp (no Seccomp line in /proc/self/status)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := string(out)
	if strings.Contains(got, "FAIL") {
		t.Errorf("checks under the filter failed:\n%s", got)
	}
	want := []string{"tgkill-own: ok", "tgkill-other: ok", "threads: ok", "ioctls: ok", "noexec: ok",
		"probe socket(2) refused: operation not permitted", "probe KVM_CREATE_VCPU refused, KVM_RUN let through"}
	for _, f := range Forbidden {
		want = append(want, f.Name+": ok")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("helper output lacks %q:\n%s", w, got)
		}
	}
	t.Logf("%s", got)
}

// TestForbiddenCovered: every Forbidden entry has a check, and nothing is
// both allowed and forbidden.
func TestForbiddenCovered(t *testing.T) {
	allowed := map[string]bool{}
	for _, s := range Allowed {
		if allowed[s.Name] {
			t.Errorf("%s is listed twice", s.Name)
		}
		allowed[s.Name] = true
	}
	for _, f := range Forbidden {
		if forbidden[f.Name] == nil {
			t.Errorf("forbidden %s has no check", f.Name)
		}
		if allowed[f.Name] {
			t.Errorf("%s is both allowed and forbidden", f.Name)
		}
	}
	if _, err := policy(); err != nil {
		t.Fatal(err)
	}
}

func readStatus(t testing.TB) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// costEnv carries the number of calls the cost helper times per case.
const costEnv = "GOVMM_SANDBOX_COST_N"

// costHelper times system calls without the filter, then with it, and
// prints "NAME BEFORE AFTER" in ns per call: what the filter adds to the
// call every exit makes (KVM_RUN's ioctl, first in the filter), to one
// late in its list (uname), and to a refused one (getppid, which runs the
// whole list before EPERM).
func costHelper() int {
	n, err := strconv.Atoi(os.Getenv(costEnv))
	if err != nil || n < 1 {
		n = 100000
	}
	run, _ := kvm.IoctlNamed("KVM_RUN")
	var uts unix.Utsname
	cases := []struct {
		name string
		call func()
	}{
		{"ioctl(KVM_RUN)", func() { unix.Syscall(unix.SYS_IOCTL, ^uintptr(0), run, 0) }},
		{"uname", func() { unix.Syscall(unix.SYS_UNAME, uintptr(unsafe.Pointer(&uts)), 0, 0) }},
		{"getppid(refused)", func() { unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0) }},
	}
	time1 := func(call func()) float64 {
		start := time.Now()
		for range n {
			call()
		}
		return float64(time.Since(start).Nanoseconds()) / float64(n)
	}
	before := make([]float64, len(cases))
	for i, c := range cases {
		before[i] = time1(c.call)
	}
	if _, err := Install(Options{}); err != nil {
		fmt.Println("install: FAIL", err)
		return 1
	}
	for i, c := range cases {
		fmt.Printf("%s %.1f %.1f\n", c.name, before[i], time1(c.call))
	}
	return 0
}

// BenchmarkFilterCost is the filter's price per system call, measured in
// a child (the filter cannot be taken off again): ns/op is KVM_RUN's
// ioctl under the filter (on fd -1: the system call's entry and the
// filter, not KVM's work), and the added-ns metrics what the filter adds
// to it, to a call late in its list and to a refused call.
func BenchmarkFilterCost(b *testing.B) {
	if !strings.Contains(readStatus(b), "Seccomp:") {
		b.Skip("SKIP: this kernel has no seccomp")
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=cost", fmt.Sprint(costEnv, "=", max(b.N, 10000)))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "FAIL") {
		b.Fatalf("cost helper: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var name string
		var before, after float64
		if _, err := fmt.Sscanf(line, "%s %f %f", &name, &before, &after); err != nil {
			b.Fatalf("cost helper line %q: %v", line, err)
		}
		unit := strings.NewReplacer("(", "-", ")", "").Replace(name)
		if name == "ioctl(KVM_RUN)" {
			b.ReportMetric(after, "ns/op")
		}
		b.ReportMetric(after-before, "added-ns/"+unit)
	}
}
