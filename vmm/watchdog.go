package vmm

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/govmm/govmm/vcpu"
)

// The watchdog looks at every vCPU thread and every device queue once per
// watchPeriod and ends the VM, with one line naming the thread, when
// govmm has stopped making progress where the guest cannot be the cause:
//
//   - a vCPU thread in the VMM (StateVMM: serving an exit) whose exit
//     count has not moved, and which every tick has seen in the VMM, for
//     the limit: an exit handler blocked (a lock never released, a
//     channel nobody reads);
//   - a vCPU in guest mode whose kick (work waiting for it) is still
//     pending after the limit, with no exit meanwhile: a kick lost. Pending
//     is the vCPU's own flag, cleared by the return from KVM_RUN, not a
//     count of kicks sent: a kick answered by its exit and followed by a
//     guest that computes (or spins with interrupts off) without exits,
//     both between two ticks, is not a lost kick;
//   - a virtqueue whose device has held one chain for the limit
//     (virtio.QueueStats.BusySince): a backend blocked.
//
// It also ends a VM whose every vCPU waits for a SIPI (ErrParked): the
// guest INITed them all, and nothing can send one any more. The goroutines'
// stacks go to standard error with a stuck verdict, for the bug report.
// It costs the vCPU loop nothing: it reads counters the loop keeps anyway.

// ErrParked ends a VM whose every vCPU is in wait-for-SIPI.
var ErrParked = errors.New("every vCPU is waiting for a SIPI (the guest INITed them all) and nothing can send one")

// ErrStuck wraps the watchdog's verdict on a thread that stopped.
var ErrStuck = errors.New("watchdog")

// DefaultWatchdog is Config.Watchdog's default for a VM of at most
// watchdogThreadsPerCPU vCPUs per host CPU; larger VMs get a multiple
// (defaultWatchdogFor).
const DefaultWatchdog = 60 * time.Second

// watchdogThreadsPerCPU is how many vCPU threads may share one host CPU
// before the default limit grows with them.
const watchdogThreadsPerCPU = 8

// defaultWatchdogFor is the limit for a VM of cpus vCPUs on hostCPUs
// host CPUs. The watchdog judges wall time, and a vCPU thread serves its
// exit only while the host runs it. Twice, a 288-vCPU Linux boot on the
// nested host's 2 CPUs (with a second nested host on the same 2 cores)
// was ended with a vCPU "serving one exit" for 2 and 5 minutes at its
// first exit, a verdict on the host's scheduling more likely than on
// govmm; the same boot alone went through. A thread starved for a CPU and
// a handler blocked on a lock both look like "sleeping" from /proc (a Go
// thread waiting for a P sleeps on a futex too), so the limit scales
// instead: DefaultWatchdog per watchdogThreadsPerCPU threads per host CPU.
func defaultWatchdogFor(cpus, hostCPUs int) time.Duration {
	return DefaultWatchdog * time.Duration(max(1, cpus/(watchdogThreadsPerCPU*max(hostCPUs, 1))))
}

const (
	watchPeriod = time.Second
	parkedFor   = 2 * time.Second // every vCPU parked this long: ErrParked
)

// cpuSample is what the watchdog reads of one vCPU at a tick.
type cpuSample struct {
	state       vcpu.State
	exits       uint64 // exits so far
	kickPending bool   // a kick sent and KVM_RUN not returned since
}

// queueSample is one virtqueue at a tick.
type queueSample struct {
	name      string // "virtio-blk queue 2"
	busySince int64  // UnixNano; 0: no chain in hand
}

// watchdog holds what the previous ticks saw. Only its goroutine uses it.
type watchdog struct {
	limit     time.Duration
	last      []cpuSample
	since     []time.Time // when vCPU i's exit count last moved
	parkedAt  time.Time   // every vCPU parked since; zero: not all parked
	kickedAt  []time.Time // first tick of a run of ticks that saw a kick pending; zero: none
	hasSample bool
}

func newWatchdog(limit time.Duration, cpus int) *watchdog {
	return &watchdog{limit: limit, last: make([]cpuSample, cpus), since: make([]time.Time, cpus), kickedAt: make([]time.Time, cpus)}
}

// check takes one tick's samples and returns the verdict: nil while
// everything moves.
func (w *watchdog) check(now time.Time, cpus []cpuSample, queues []queueSample) error {
	parked := len(cpus) > 0
	for i, c := range cpus {
		if c.state != vcpu.StateWaitSIPI {
			parked = false
		}
		if !w.hasSample || c.exits != w.last[i].exits {
			w.since[i], w.kickedAt[i] = now, time.Time{}
		}
		if c.state != vcpu.StateVMM {
			// Serving one exit began after this tick at the earliest.
			// A HLT's exit is counted when it is taken, and the vCPU
			// serves it again once woken (halted, or parked in the
			// halt, for minutes), with the same count: CI 2026-12-07
			// ended a live VM "serving one exit for 1m15s" at the first
			// tick after a 2-minute pause, its vCPU woken from the halt
			// it had been parked in.
			w.since[i] = now
		}
		stalled := now.Sub(w.since[i])
		switch c.state {
		case vcpu.StateVMM:
			if stalled >= w.limit {
				return fmt.Errorf("%w: vCPU %d has been serving one exit for %v (exits stuck at %d; the limit is %v)", ErrStuck, i, stalled.Round(time.Second), c.exits, w.limit)
			}
		case vcpu.StateGuest:
			switch {
			case !c.kickPending:
				w.kickedAt[i] = time.Time{}
			case w.kickedAt[i].IsZero():
				w.kickedAt[i] = now
			}
			if !w.kickedAt[i].IsZero() && now.Sub(w.kickedAt[i]) >= w.limit {
				return fmt.Errorf("%w: vCPU %d was kicked %v ago and has not left the guest", ErrStuck, i, now.Sub(w.kickedAt[i]).Round(time.Second))
			}
		default: // halted, waiting for SIPI, stopped: waiting is what they do
			w.kickedAt[i] = time.Time{}
		}
	}
	copy(w.last, cpus)
	w.hasSample = true
	switch {
	case !parked:
		w.parkedAt = time.Time{}
	case w.parkedAt.IsZero():
		w.parkedAt = now
	case now.Sub(w.parkedAt) >= parkedFor:
		return ErrParked
	}
	for _, q := range queues {
		if q.busySince == 0 {
			continue
		}
		if d := now.Sub(time.Unix(0, q.busySince)); d >= w.limit {
			return fmt.Errorf("%w: %s has been serving one request for %v", ErrStuck, q.name, d.Round(time.Second))
		}
	}
	return nil
}

// samples reads every vCPU and queue now.
func (vm *VM) samples() ([]cpuSample, []queueSample) {
	cpus := make([]cpuSample, len(vm.cpus))
	for i, c := range vm.cpus {
		n := vm.acct.CPUs[i].Exits.Total()
		cpus[i] = cpuSample{state: c.State(), exits: n, kickPending: c.KickPending()}
	}
	var queues []queueSample
	if vm.pci != nil {
		for _, f := range vm.pci.funcs {
			st := f.t.Stats()
			for q := range st.Queues {
				queues = append(queues, queueSample{name: fmt.Sprintf("%s queue %d", f.name, q), busySince: st.Queues[q].BusySince.Load()})
			}
		}
	}
	return cpus, queues
}

// watch runs the watchdog until the VM ends; its verdict ends the VM.
func (vm *VM) watch(limit time.Duration) {
	w := newWatchdog(limit, len(vm.cpus))
	t := time.NewTicker(watchPeriod)
	defer t.Stop()
	for {
		select {
		case <-vm.done:
			return
		case now := <-t.C:
			cpus, queues := vm.samples()
			err := w.check(now, cpus, queues)
			if err == nil {
				continue
			}
			if errors.Is(err, ErrStuck) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				vm.log().Error(err.Error(), "goroutines", string(buf))
			}
			vm.stop("watchdog", -1, err)
			return
		}
	}
}
