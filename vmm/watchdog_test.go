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
	run := func(s vcpu.State, exits, kicks uint64) cpuSample {
		return cpuSample{state: s, exits: exits, kicks: kicks}
	}

	t.Run("moving", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 2)
		for s := range 30 {
			if err := w.check(at(s), []cpuSample{run(vcpu.StateVMM, uint64(s), 0), run(vcpu.StateHalted, 5, 0)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("exit handler blocked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		var err error
		s := 0
		for ; s < 30 && err == nil; s++ {
			err = w.check(at(s), []cpuSample{run(vcpu.StateVMM, 7, 0)}, nil)
		}
		if !errors.Is(err, ErrStuck) || s != 11 {
			t.Fatalf("after %d ticks: %v, want ErrStuck after 11", s, err)
		}
	})
	t.Run("guest computing, not kicked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		for s := range 30 {
			if err := w.check(at(s), []cpuSample{run(vcpu.StateGuest, 7, 3)}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("kick lost", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		var err error
		s := 0
		for ; s < 30 && err == nil; s++ {
			kicks := uint64(3)
			if s >= 5 {
				kicks = 4 // kicked at tick 5, never exits
			}
			err = w.check(at(s), []cpuSample{run(vcpu.StateGuest, 7, kicks)}, nil)
		}
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
			if err := w.check(at(s), []cpuSample{run(vcpu.StateGuest, exits, uint64(min(s, 5)))}, nil); err != nil {
				t.Fatalf("tick %d: %v", s, err)
			}
		}
	})
	t.Run("all parked", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 2)
		if err := w.check(at(0), []cpuSample{run(vcpu.StateWaitSIPI, 1, 0), run(vcpu.StateGuest, 1, 0)}, nil); err != nil {
			t.Fatal(err)
		}
		var err error
		s := 1
		for ; s < 10 && err == nil; s++ {
			err = w.check(at(s), []cpuSample{run(vcpu.StateWaitSIPI, 1, 0), run(vcpu.StateWaitSIPI, 2, 0)}, nil)
		}
		if err != ErrParked || s != 4 {
			t.Fatalf("after %d ticks: %v, want ErrParked after 4 (parked at 1, 2 s later)", s, err)
		}
	})
	t.Run("device stuck", func(t *testing.T) {
		w := newWatchdog(10*time.Second, 1)
		q := []queueSample{{name: "virtio-blk queue 0", busySince: at(2).UnixNano()}}
		if err := w.check(at(11), []cpuSample{run(vcpu.StateHalted, 1, 0)}, q); err != nil {
			t.Fatal(err)
		}
		if err := w.check(at(12), []cpuSample{run(vcpu.StateHalted, 1, 0)}, q); !errors.Is(err, ErrStuck) {
			t.Fatalf("%v, want ErrStuck", err)
		}
		q[0].busySince = 0
		if err := w.check(at(40), []cpuSample{run(vcpu.StateHalted, 1, 0)}, q); err != nil {
			t.Fatal(err)
		}
	})
}
