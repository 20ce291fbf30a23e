package vmm

import (
	"errors"
	"testing"
	"time"

	"github.com/govmm/govmm/vcpu"
)

// The watchdog's verdicts, tick by tick, on a fake clock.
func TestWatchdog(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	run := func(s vcpu.State, exits uint64, kickPending bool) cpuSample {
		return cpuSample{state: s, exits: exits, kickPending: kickPending}
	}
	// untilVerdict ticks w at seconds from, from+1, ... (before to),
	// sampling cpus(s) at each, until a verdict; it returns the second
	// after the tick that gave it (to if none did) and the verdict.
	untilVerdict := func(w *watchdog, from, to int, cpus func(s int) []cpuSample) (int, error) {
		var err error
		s := from
		for ; s < to && err == nil; s++ {
			err = w.check(at(s), cpus(s), nil)
		}
		return s, err
	}

	t.Run("moving", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 2)
		for s := range 30 {
			if err := w.check(at(s), []cpuSample{run(vcpu.StateVMM, uint64(s), false), run(vcpu.StateHalted, 5, false)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("exit handler blocked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		s, err := untilVerdict(w, 0, 30, func(int) []cpuSample { return []cpuSample{run(vcpu.StateVMM, 7, false)} })
		if !errors.Is(err, ErrStuck) || s != 11 {
			t.Fatalf("after %d ticks: %v, want ErrStuck after 11", s, err)
		}
	})
	t.Run("woken after a long halt", func(t *testing.T) {
		// The HLT's exit is counted when taken; halted (or parked in the
		// halt) for 30 s, then woken, the vCPU serves the rest of it in
		// the VMM with the same count for a tick or two.
		w := newWatchdog(10*time.Second, 1)
		for s := range 34 {
			st := vcpu.StateHalted
			switch {
			case s >= 10 && s < 20:
				st = vcpu.StateParked
			case s >= 30:
				st = vcpu.StateVMM
			}
			if err := w.check(at(s), []cpuSample{run(st, 7, false)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
		// Still there with the same count for the limit: stuck.
		s, err := untilVerdict(w, 34, 60, func(int) []cpuSample { return []cpuSample{run(vcpu.StateVMM, 7, false)} })
		if !errors.Is(err, ErrStuck) || s != 40 {
			t.Fatalf("after %d ticks: %v, want ErrStuck after 40 (seen waiting last at tick 29)", s, err)
		}
	})
	t.Run("guest computing, not kicked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		for s := range 30 {
			if err := w.check(at(s), []cpuSample{run(vcpu.StateGuest, 7, false)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("kick lost", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		// kicked at tick 5, never exits: the kick stays pending
		s, err := untilVerdict(w, 0, 30, func(s int) []cpuSample { return []cpuSample{run(vcpu.StateGuest, 7, s >= 5)} })
		if !errors.Is(err, ErrStuck) || s != 16 {
			t.Fatalf("after %d ticks: %v, want ErrStuck after 16", s, err)
		}
	})
	t.Run("kick answered", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		for s := range 30 {
			exits := uint64(7)
			if s >= 8 {
				exits = 8
			}
			// kicked at tick 5, the exit at tick 8 answers it
			if err := w.check(at(s), []cpuSample{run(vcpu.StateGuest, exits, s >= 5 && s < 8)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("kick answered within a tick, then a long computation", func(t *testing.T) {
		// Kicked at tick 5; the kick's exit and the re-entry come before
		// tick 5 samples, and the guest then computes (or spins with
		// interrupts off) without an exit: nothing is lost. Seen in the
		// nested AMD-V host: "vCPU 257 was kicked 1m0s ago" with as many
		// kick exits as kicks.
		w := newWatchdog(10*time.Second, 1)
		for s := range 30 {
			exits := uint64(7)
			if s >= 5 {
				exits = 8
			}
			// tick 4 saw the kick pending; tick 5 sees its exit and no kick
			if err := w.check(at(s), []cpuSample{run(vcpu.StateGuest, exits, s == 4)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("all parked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 2)
		if err := w.check(at(0), []cpuSample{run(vcpu.StateWaitSIPI, 1, false), run(vcpu.StateGuest, 1, false)}, nil); err != nil {
			t.Fatal(err)
		}
		s, err := untilVerdict(w, 1, 10, func(int) []cpuSample {
			return []cpuSample{run(vcpu.StateWaitSIPI, 1, false), run(vcpu.StateWaitSIPI, 2, false)}
		})
		if err != ErrParked || s != 4 {
			t.Fatalf("after %d ticks: %v, want ErrParked after 4 (parked at 1, 2 s later)", s, err)
		}
	})
	t.Run("device stuck", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		q := []queueSample{{name: "virtio-blk queue 0", busySince: at(2).UnixNano()}}
		if err := w.check(at(11), []cpuSample{run(vcpu.StateHalted, 1, false)}, q); err != nil {
			t.Fatal(err)
		}
		if err := w.check(at(12), []cpuSample{run(vcpu.StateHalted, 1, false)}, q); !errors.Is(err, ErrStuck) {
			t.Fatalf("%v, want ErrStuck", err)
		}
		q[0].busySince = 0
		if err := w.check(at(40), []cpuSample{run(vcpu.StateHalted, 1, false)}, q); err != nil {
			t.Fatal(err)
		}
	})
}

// The default limit grows with the vCPU threads each host CPU must run.
func TestDefaultWatchdogFor(t *testing.T) {
	for _, c := range []struct {
		cpus, host int
		want       time.Duration
	}{
		{1, 2, DefaultWatchdog},
		{16, 2, DefaultWatchdog},
		{64, 2, 4 * DefaultWatchdog},
		{288, 2, 18 * DefaultWatchdog},
		{288, 64, DefaultWatchdog},
		{8, 0, DefaultWatchdog},
	} {
		if got := defaultWatchdogFor(c.cpus, c.host); got != c.want {
			t.Errorf("%d vCPUs on %d host CPUs: %v, want %v", c.cpus, c.host, got, c.want)
		}
	}
}
