package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// The filter stays on a process for good, so each check runs in a child:
// this test binary run again with helperEnv set, which installs the filter
// and prints one line per check.
const helperEnv = "GOVMM_SANDBOX_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
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
	return 0
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
	want := []string{"tgkill-own: ok", "tgkill-other: ok", "threads: ok", "probe socket(2) refused: operation not permitted"}
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

func readStatus(t *testing.T) string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
