package accounting

import (
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"sync/atomic"
	"text/tabwriter"
)

// LatencyStage is a point on an IPI's way to a target at which govmm
// observes its latency, from the exit of the sender that sent it (the
// stages Observer sees).
type LatencyStage uint8

const (
	LatencyAccepted LatencyStage = iota // the target's LAPIC accepted it (IRR set or posted)
	LatencyInjected                     // the target's vCPU took it for injection
	LatencyEnded                        // the target ended it (EOI, or its PV EOI completed)
	NumLatencyStages
)

var latencyStageNames = [NumLatencyStages]string{"accepted", "injected", "ended"}

func (s LatencyStage) String() string {
	if s < NumLatencyStages {
		return latencyStageNames[s]
	}
	return "stage?"
}

// Latency buckets are powers of two of nanoseconds: bucket i holds
// latencies below 2^(i+latencyMinShift) ns (the first everything below
// 1.024 us), the last everything from 2^31 ns (2.1 s) up.
const (
	latencyMinShift   = 10
	NumLatencyBuckets = 23
)

// LatencyBound is the upper bound of bucket i in nanoseconds; the last
// bucket has none (0).
func LatencyBound(i int) uint64 {
	if i >= NumLatencyBuckets-1 {
		return 0
	}
	return 1 << (i + latencyMinShift)
}

func latencyBucket(ns int64) int {
	if ns < 1<<latencyMinShift {
		return 0
	}
	return min(bits.Len64(uint64(ns))-latencyMinShift, NumLatencyBuckets-1)
}

// Histogram counts latencies in power-of-two buckets. Observe is one
// bucket increment and one add to the sum: lock-free, no allocation, safe
// from any thread.
type Histogram struct {
	Buckets [NumLatencyBuckets]atomic.Uint64
	SumNs   atomic.Uint64
}

// Observe counts one latency of ns nanoseconds (a negative one, which a
// monotonic clock cannot give, counts as 0).
func (h *Histogram) Observe(ns int64) {
	ns = max(ns, 0)
	h.Buckets[latencyBucket(ns)].Add(1)
	h.SumNs.Add(uint64(ns))
}

// Latencies are a VM's interrupt latency histograms, per stage and per
// destination kind of the IPI (device MSIs as one more kind, DeviceMSI).
//
// By kind, then stage: an IPI's stages are observed one after the other,
// and so are on one page (4 KiB holds a kind's three), not three.
type Latencies [numLatencyKinds][NumLatencyStages]Histogram

// Observe counts one latency of an IPI of kind k (or a device MSI) at
// stage s.
func (l *Latencies) Observe(s LatencyStage, k IPIKind, ns int64) {
	if s < NumLatencyStages && k < numLatencyKinds {
		l[k][s].Observe(ns)
	}
}

// LatencyReport is one histogram of the report: an IPI destination kind
// at one stage, with its buckets (upper bound in ns, 0 for the last, and
// the count in it: not cumulative) and quantiles read from them (each the
// upper bound of the bucket that reaches it: an overestimate within 2x).
type LatencyReport struct {
	Kind    string          `json:"kind"`
	Stage   string          `json:"stage"`
	Count   uint64          `json:"count"`
	SumNs   uint64          `json:"sum_ns"`
	P50Ns   uint64          `json:"p50_ns"`
	P90Ns   uint64          `json:"p90_ns"`
	P99Ns   uint64          `json:"p99_ns"`
	Buckets []LatencyBucket `json:"buckets"`
}

// LatencyBucket is one bucket of a LatencyReport.
type LatencyBucket struct {
	LeNs  uint64 `json:"le_ns"` // upper bound (exclusive); 0: none (the last bucket)
	Count uint64 `json:"count"`
}

// Report lists the histograms that counted anything, by stage then kind.
// It reads the stages last to first: an interrupt passes them in order,
// so a report of a running VM then never shows more ended than injected
// or injected than accepted, however long its goroutine is held up
// between two reads (read first to last, a report taken while the host
// was loaded showed 206 accepted, 206 injected and 209 ended).
func (l *Latencies) Report() []LatencyReport {
	var byStage [NumLatencyStages][]LatencyReport
	for s := int(NumLatencyStages) - 1; s >= 0; s-- {
		byStage[s] = l.stageReport(LatencyStage(s))
	}
	var out []LatencyReport
	for _, rs := range byStage {
		out = append(out, rs...)
	}
	return out
}

// stageReport lists stage s's histograms that counted anything, by kind.
func (l *Latencies) stageReport(s LatencyStage) []LatencyReport {
	var out []LatencyReport
	for k := range IPIKind(numLatencyKinds) {
		h := &l[k][s]
		r := LatencyReport{Kind: k.String(), Stage: s.String(), SumNs: h.SumNs.Load()}
		var counts [NumLatencyBuckets]uint64
		for i := range counts {
			counts[i] = h.Buckets[i].Load()
			r.Count += counts[i]
		}
		if r.Count == 0 {
			continue
		}
		last := 0
		for i, n := range counts {
			if n != 0 {
				last = i
			}
		}
		for i := 0; i <= last; i++ {
			r.Buckets = append(r.Buckets, LatencyBucket{LatencyBound(i), counts[i]})
		}
		r.P50Ns, r.P90Ns, r.P99Ns = quantile(counts, r.Count, 0.5), quantile(counts, r.Count, 0.9), quantile(counts, r.Count, 0.99)
		out = append(out, r)
	}
	return out
}

// quantile is the upper bound of the bucket where the q-th share of total
// is reached (for the last bucket, which has none, the bound below it
// doubled).
func quantile(counts [NumLatencyBuckets]uint64, total uint64, q float64) uint64 {
	want := uint64(q*float64(total) + 0.5)
	want = max(want, 1)
	var sum uint64
	for i, n := range counts {
		sum += n
		if sum >= want {
			if b := LatencyBound(i); b != 0 {
				return b
			}
			return LatencyBound(i-1) * 2
		}
	}
	return 0
}

// writeLatency writes the latency histograms as one line each: count and
// quantiles in microseconds.
func writeLatency(w io.Writer, rs []LatencyReport) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "IPI latency from the send (its ICR write or PV send-IPI served), by stage and destination kind (us; quantiles are bucket bounds, within 2x)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  stage\tkind\tIPIs\tmean\tp50\tp90\tp99\t")
	us := func(ns uint64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', 1, 64) }
	for _, r := range rs {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", r.Stage, r.Kind, r.Count, us(r.SumNs/max(r.Count, 1)),
			us(r.P50Ns), us(r.P90Ns), us(r.P99Ns))
	}
	tw.Flush()
}
