package vmm

import "testing"

// TestProcsFor: a P per vCPU and two more, never fewer than the process
// has, and the user's GOMAXPROCS left alone.
func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		cpus, now int
		env       string
		want      int
	}{
		{4, 2, "", 6},
		{1024, 2, "", 1026},
		{1, 8, "", 8},
		{4, 6, "", 6},
		{64, 2, "2", 2},
		{64, 16, "16", 16},
	} {
		if got := procsFor(c.cpus, c.now, c.env); got != c.want {
			t.Errorf("procsFor(%d vCPUs, GOMAXPROCS %d, env %q) = %d, want %d", c.cpus, c.now, c.env, got, c.want)
		}
	}
}

// TestKVMRun: --kvm-run's values, and auto's rule (raw up to two vCPU
// threads per host CPU).
func TestKVMRun(t *testing.T) {
	for _, c := range []struct {
		cpus, host int
		want       bool
	}{{2, 2, true}, {4, 2, true}, {5, 2, false}, {2, 1, true}, {3, 1, false}, {64, 2, false}, {64, 32, true}} {
		if got := KVMRunAuto.raw(c.cpus, c.host); got != c.want {
			t.Errorf("auto with %d vCPUs on %d host CPUs: raw %v, want %v", c.cpus, c.host, got, c.want)
		}
		if !KVMRunRaw.raw(c.cpus, c.host) || KVMRunSyscall.raw(c.cpus, c.host) {
			t.Errorf("raw or syscall depends on the vCPU count (%d on %d)", c.cpus, c.host)
		}
	}
	for s, want := range map[string]KVMRun{"": KVMRunAuto, "auto": KVMRunAuto, "syscall": KVMRunSyscall, "raw": KVMRunRaw} {
		if got, err := ParseKVMRun(s); err != nil || got != want {
			t.Errorf("ParseKVMRun(%q) = %v, %v; want %v", s, got, err, want)
		}
		if s != "" && want.String() != s {
			t.Errorf("%v prints as %q", want, want.String())
		}
	}
	if _, err := ParseKVMRun("fast"); err == nil || err.Error() != `--kvm-run="fast": want auto, syscall or raw` {
		t.Errorf("ParseKVMRun(fast): %v", err)
	}
}
