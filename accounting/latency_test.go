package accounting

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLatencyBuckets: bucket i holds latencies below 2^(i+10) ns, the
// first everything below 1.024 us, the last everything from 2^31 ns.
func TestLatencyBuckets(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want int
	}{{-5, 0}, {0, 0}, {1023, 0}, {1024, 1}, {2047, 1}, {2048, 2}, {1 << 20, 11}, {1<<31 - 1, 21}, {1 << 31, 22}, {1 << 62, 22}} {
		if got := latencyBucket(c.ns); got != c.want {
			t.Errorf("%d ns in bucket %d, want %d", c.ns, got, c.want)
		}
		if b := LatencyBound(c.want); b != 0 && c.ns >= int64(b) {
			t.Errorf("%d ns in a bucket bounded by %d", c.ns, b)
		}
	}
	if LatencyBound(NumLatencyBuckets-1) != 0 || LatencyBound(0) != 1024 {
		t.Errorf("bounds: first %d, last %d", LatencyBound(0), LatencyBound(NumLatencyBuckets-1))
	}
}

// TestLatencyReport: only histograms that counted are reported, with
// their buckets up to the last non-empty one, the sum, and quantiles that
// are bucket bounds; the JSON and the text report carry them.
func TestLatencyReport(t *testing.T) {
	var l Latencies
	for range 90 {
		l.Observe(LatencyInjected, IPIX2APICPhysical, 3000) // bucket < 4096
	}
	for range 9 {
		l.Observe(LatencyInjected, IPIX2APICPhysical, 20000) // < 32768
	}
	l.Observe(LatencyInjected, IPIX2APICPhysical, 5e6) // < 8388608
	l.Observe(LatencyEnded, IPIParavirt, 100)
	l.Observe(NumLatencyStages, IPIParavirt, 1) // ignored
	l.Observe(LatencyEnded, DeviceMSI, 1)       // device MSIs: one more kind
	l.Observe(LatencyEnded, DeviceMSI+1, 1)     // ignored
	rs := l.Report()
	if len(rs) != 3 {
		t.Fatalf("%d histograms reported, want 3: %+v", len(rs), rs)
	}
	if rs[2].Kind != "device_msi" || rs[2].Stage != "ended" || rs[2].Count != 1 {
		t.Errorf("device MSI histogram %+v", rs[2])
	}
	r := rs[0]
	if r.Kind != "x2apic_physical" || r.Stage != "injected" || r.Count != 100 || r.SumNs != 90*3000+9*20000+5e6 {
		t.Errorf("first histogram %+v", r)
	}
	if r.P50Ns != 4096 || r.P90Ns != 4096 || r.P99Ns != 32768 {
		t.Errorf("quantiles p50 %d p90 %d p99 %d, want 4096 4096 32768", r.P50Ns, r.P90Ns, r.P99Ns)
	}
	if n := len(r.Buckets); n != 14 || r.Buckets[n-1].LeNs != 8388608 || r.Buckets[n-1].Count != 1 || r.Buckets[2].Count != 90 {
		t.Errorf("buckets %+v", r.Buckets)
	}
	if rs[1].Kind != "pv" || rs[1].Stage != "ended" || rs[1].P99Ns != 1024 {
		t.Errorf("second histogram %+v", rs[1])
	}
	a := NewVM(1)
	a.Latency.Observe(LatencyAccepted, IPISelf, 1500)
	rep := a.Report()
	b, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(b), `"ipi_latency":[{"kind":"self","stage":"accepted","count":1,"sum_ns":1500`) {
		t.Errorf("JSON %v:\n%s", err, b)
	}
	var s strings.Builder
	rep.WriteTable(&s)
	if !strings.Contains(s.String(), "IPI latency from the send") || !strings.Contains(s.String(), "accepted") {
		t.Errorf("text report lacks the latency table:\n%s", s.String())
	}
}

// TestLatencyReportStagesInOrder: a report taken while interrupts pass
// their stages never shows a later stage ahead of an earlier one, since
// Report reads the stages last to first.
func TestLatencyReportStagesInOrder(t *testing.T) {
	var l Latencies
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for s := range NumLatencyStages {
				l.Observe(s, IPIX2APICLogical, 1000)
			}
		}
	}()
	for range 2000 {
		counts := map[string]uint64{}
		for _, r := range l.Report() {
			counts[r.Stage] = r.Count
		}
		if counts["ended"] > counts["injected"] || counts["injected"] > counts["accepted"] {
			t.Fatalf("report shows %v: a later stage ahead of an earlier one", counts)
		}
	}
	close(stop)
	<-done
}
