package tests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/vmm"
)

// The in-guest fuzzer (guest/baremetal/fuzz.c) attacks govmm from 4 vCPUs
// at once, one seed after another, each for GOVMM_FUZZ_SEEDTIME seconds
// (30), until GOVMM_FUZZTIME has passed (CI: 2m; `make guestfuzz
// FUZZTIME=30m`), starting at seed GOVMM_FUZZ_SEED (1). The VM has
// everything the fuzzer can reach: the remapping unit, PV send-IPI and PV
// EOI, a virtio-blk disk (a scratch image) and a virtio console.
//
// The verdict is govmm's side's: a seed passes when the guest ends as it
// chose (PASS, its own invariants kept) or for an architectural reason (a
// triple fault, an INIT to the BSP, every vCPU parked in wait-for-SIPI),
// with no watchdog
// verdict (vmm/watchdog.go: a vCPU or device thread stuck), no other
// error, no goroutine left behind after Close, and the Go heap not
// growing from seed to seed. A failing seed is named with the command
// that replays it.
func TestGuestFuzz(t *testing.T) {
	needKVM(t)
	path := filepath.Join(guestDir(t), "fuzz.elf")
	img, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("SKIP: %v: build the guests with 'make guests'", err)
	}
	total := envDuration(t, "GOVMM_FUZZTIME", 2*time.Minute)
	seedTime := envDuration(t, "GOVMM_FUZZ_SEEDTIME", 30*time.Second)
	seed := 1
	if s := os.Getenv("GOVMM_FUZZ_SEED"); s != "" {
		if seed, err = strconv.Atoi(s); err != nil {
			t.Fatalf("GOVMM_FUZZ_SEED=%q: %v", s, err)
		}
	}
	secs := int(seedTime / time.Second)
	// GOVMM_FUZZ_ARGS: more words for the guest's command line (init=0
	// leaves INIT and StartUp out of everything the fuzz writes). CI
	// fuzzes with them in, as make guestfuzz does, since the heartbeat
	// failures of the 30-minute runs were understood as the guest's own
	// (docs/guest-attacks.md).
	args := os.Getenv("GOVMM_FUZZ_ARGS")
	disk := filepath.Join(t.TempDir(), "scratch.img")
	if err := os.WriteFile(disk, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	baseGoroutines := -1 // after the first VM: the process's one-time goroutines (os/signal) are up then
	var heap0 uint64
	rate := regexp.MustCompile(`# fuzz seed=\d+: (\d+) accesses in (\d+) s on \d+ CPUs, (\d+) per second; (\d+) faults.*; (\d+) restarts`)
	trampLine := regexp.MustCompile(`trampoline found overwritten[^\n]*`)
	apicOff := regexp.MustCompile(`END fuzz: CPU (\d+) stopped with its APIC hardware-disabled`)
	var seeds, passed, shutdowns, parked, disabled int
	var accesses, faults, restarts, exits uint64
	start := time.Now()
	for ; time.Since(start) < total; seed++ {
		cmdline := fmt.Sprintf("seed=%d secs=%d %s", seed, secs, args)
		replay := fmt.Sprintf("replay: govmm run --cpus 4 --iommu --pv-ipi --pv-eoi --virtio-console --disk IMG,rw %s %s", path, cmdline)
		var con vmm.ConsoleLog
		cfg := vmm.Config{CPUs: 4, Kernel: img, KernelPath: path, Cmdline: cmdline, Console: &con,
			IOMMU: true, PVIPI: true, PVEOI: true, VirtioConsole: true,
			Disk: vmm.Disk{Path: disk}, Watchdog: 20 * time.Second}
		vm, err := vmm.New(cfg)
		if err != nil {
			t.Fatalf("seed %d: vmm.New: %v", seed, err)
		}
		res := vm.Run(seedTime + 90*time.Second)
		vmExits := vm.Accounting().Report().Total.Exits
		exits += vmExits
		out := con.String()
		// A failing seed ends the test with govmm's side too (each vCPU's
		// LAPIC and last events), read before the VM is closed.
		fail := func(format string, args ...any) {
			state := endState(vm)
			vm.Close()
			t.Fatalf(format+"%s", append(args, state)...)
		}
		seeds++
		switch {
		case res.Err == nil && res.Status == 1 && strings.Contains(out, "PASS fuzz"):
			passed++
			if m := rate.FindStringSubmatch(out); m != nil {
				num := func(i int) uint64 { n, _ := strconv.ParseUint(m[i], 10, 64); return n }
				accesses, faults, restarts = accesses+num(1), faults+num(4), restarts+num(5)
				t.Logf("seed %d: PASS, %s accesses in %s s (%s/s), %s faults answered, %s restarts, %d exits; %s",
					seed, m[1], m[2], m[3], m[4], m[5], vmExits, trampLine.FindString(out))
			}
		case errors.Is(res.Err, vcpu.ErrShutdown):
			shutdowns++
			t.Logf("seed %d: the guest shut down or reset the VM (architectural end): %v", seed, res.Err)
		case errors.Is(res.Err, vmm.ErrParked):
			parked++
			t.Logf("seed %d: the guest parked every vCPU (architectural end)", seed)
		case res.Err == nil && res.Status == 5 && apicOff.MatchString(out) && !strings.Contains(out, "FAIL"):
			// The guest's own end, if govmm agrees: that vCPU waits for a
			// SIPI (an INIT was its last event) with its LAPIC disabled.
			n, _ := strconv.Atoi(apicOff.FindStringSubmatch(out)[1])
			if n >= len(vm.VCPUs()) || !vm.VCPUs()[n].ParkedByINIT() || vm.APICs().LAPIC(n).Snapshot().Mode != vlapic.ModeDisabled {
				fail("seed %d: the guest says CPU %d stopped with its APIC disabled, and govmm's vCPU is not parked by INIT with its LAPIC disabled (%s)\n%s", seed, n, replay, tail(out, 3000))
			}
			disabled++
			t.Logf("seed %d: CPU %d stopped with its APIC hardware-disabled, where no INIT or SIPI reaches it (architectural end; govmm's vCPU agrees: parked by INIT, LAPIC disabled)", seed, n)
		case strings.Contains(out, "FAIL"):
			fail("seed %d: the guest's invariant broke (%s):\n%s", seed, replay, tail(out, 3000))
		default:
			fail("seed %d: %v (status %d, how %q); %s\nconsole:\n%s", seed, res.Err, res.Status, res.How, replay, tail(out, 3000))
		}
		vm.Close()
		// Nothing of this VM may outlive Close, and the heap must not grow
		// with the seeds (guest RAM is mmap'd, not heap).
		deadline := time.Now().Add(5 * time.Second)
		if baseGoroutines < 0 {
			time.Sleep(time.Second)
			baseGoroutines = runtime.NumGoroutine()
		}
		for runtime.NumGoroutine() > baseGoroutines && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > baseGoroutines {
			buf := make([]byte, 1<<20)
			t.Fatalf("seed %d: %d goroutines after Close, %d after the first VM's:\n%s", seed, n, baseGoroutines, buf[:runtime.Stack(buf, true)])
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if heap0 == 0 {
			heap0 = ms.HeapInuse
		} else if ms.HeapInuse > heap0+64<<20 {
			t.Fatalf("seed %d: Go heap in use %d MiB, %d MiB after the first seed", seed, ms.HeapInuse>>20, heap0>>20)
		}
	}
	el := time.Since(start).Seconds()
	t.Logf("%d seeds in %.0f s: %d passed, %d triple faults or resets, %d parked, %d with a CPU stopped with its APIC disabled; %d accesses (%.0f/s over the passing seeds' run time), %d faults answered and %d restarts in the passing seeds, %d exits in all",
		seeds, el, passed, shutdowns, parked, disabled, accesses, float64(accesses)/(float64(passed*secs)+1e-9), faults, restarts, exits)
	if passed == 0 {
		t.Fatalf("no seed ran to its end (%d seeds)", seeds)
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 30m", name, s)
	}
	return d
}

// TestFuzzRestart runs fuzz.elf's restart=1 (nothing but INIT and SIPI from
// the BSP to each AP, over and over; a quarter of the starts first give the
// AP an xAPIC ID of its own, which the INIT keeps) and requires every AP
// back each time. It pins two things the long fuzz runs rely on: govmm
// restarts a CPU at whatever point it stopped, and an INIT in x2APIC
// format reaches an xAPIC CPU by its rewritten xAPIC ID, as KVM's
// kvm_apic_match_physical_addr does (the fuzz's monitor sends there too:
// sent only to the initial ID, 10 of 18 restarts were lost).
func TestFuzzRestart(t *testing.T) {
	t.Parallel()
	g := runGuestFor(t, "fuzz.elf", 4, true, "restart=1 secs=10", nil, 5*time.Minute)
	m := regexp.MustCompile(`# restart=1: (\d+) restarts, 0 CPUs that did not come back`).FindStringSubmatch(g.Console)
	if m == nil {
		t.Fatalf("no restart summary with none lost:\n%s", g.Console)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 3 {
		t.Errorf("%d restarts in 10 s, want at least one per AP", n)
	}
	t.Logf("%d restarts, none lost", n)
}
