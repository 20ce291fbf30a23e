package tests

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/govmm/govmm/vmm"
)

// TestStopTheWorldWithRawKVMRun: a stop-the-world completes while every
// vCPU is in the guest and makes no exit, whichever way the loop enters
// it (vmm.Config.KVMRun). rtt.elf with a long gap keeps both vCPUs in
// guest code for most of the run (the sender waits gap TSC cycles with
// RDTSC, a spinning receiver polls memory), while this process collects
// garbage every 20 ms:
//   - syscall: KVM_RUN is a system call to Go's scheduler, whose P the
//     stop-the-world takes at once;
//   - raw: the goroutine counts as running inside KVM_RUN, and only Go's
//     preemption signal, let through on the vCPU thread, ends KVM_RUN so
//     that the goroutine stops. Were SIGURG blocked there, each
//     collection would wait for the guest's next exit, gap cycles away
//     (one TSC second: several seconds in the nested hosts).
//
// Every collection must end (a hung one fails the test after 20 s), the
// guest must pass, and with raw the signal must have ended KVM_RUNs
// (host_signals). The time Go took to stop the world (runtime/metrics
// /sched/pauses/stopping/gc:seconds, its largest bucket) is logged for
// each: what the raw KVM_RUN costs the runtime (docs/exit-cost.md).
func TestStopTheWorldWithRawKVMRun(t *testing.T) {
	for _, run := range []vmm.KVMRun{vmm.KVMRunSyscall, vmm.KVMRunRaw} {
		t.Run(run.String(), func(t *testing.T) {
			needKVM(t)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var gcs int
			var longest time.Duration
			hung := make(chan time.Duration, 1)
			before := stoppingHist()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					start := time.Now()
					done := make(chan struct{})
					go func() { runtime.GC(); close(done) }()
					select {
					case <-done:
					case <-time.After(20 * time.Second):
						hung <- time.Since(start)
						<-done
					}
					gcs++
					longest = max(longest, time.Since(start))
				}
			}()
			g := runGuestWith(t, "rtt.elf", 2, true, "mode=x2apic-phys rounds=3 gap=1000000000",
				func(c *vmm.Config) { c.KVMRun = run })
			close(stop)
			wg.Wait()
			select {
			case d := <-hung:
				t.Fatalf("a garbage collection took over %v with the vCPUs in the guest: the stop-the-world waited on KVM_RUN", d)
			default:
			}
			if gcs < 10 {
				t.Fatalf("only %d collections during the run: the test proves nothing", gcs)
			}
			var host uint64
			for _, c := range g.Report.CPUs {
				host += c.HostSignals
			}
			stopping := stoppingMax(before, stoppingHist())
			t.Logf("%s: %d collections, the longest %v; stopping the world took at most %s; %d KVM_RUNs ended by a host signal",
				run, gcs, longest.Round(time.Microsecond), stopping, host)
			if run == vmm.KVMRunRaw && host == 0 {
				t.Errorf("no KVM_RUN ended by a host signal in %d collections: did the stop-the-world wait for exits instead?", gcs)
			}
		})
	}
}

const stoppingMetric = "/sched/pauses/stopping/gc:seconds"

func stoppingHist() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: stoppingMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// stoppingMax is the upper bound of the highest bucket that gained counts
// from before to after, as a duration ("?" without the metric).
func stoppingMax(before, after *metrics.Float64Histogram) string {
	if before == nil || after == nil {
		return "?"
	}
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			if math.IsInf(after.Buckets[i+1], 1) {
				return fmt.Sprintf("over %v", time.Duration(after.Buckets[i]*float64(time.Second)).Round(time.Microsecond))
			}
			return fmt.Sprint(time.Duration(after.Buckets[i+1] * float64(time.Second)).Round(time.Microsecond))
		}
	}
	return "0"
}
