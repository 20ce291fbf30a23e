package dashboard

import (
	"math/bits"
	"sort"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vlapic"
)

// State is the body of GET /api/v1/state. Counters are live (read at the
// request); rates (…_per_sec) are over the last sampling interval;
// exits_per_ipi is attributed up to the last sample (see ipicost.go).
type State struct {
	Time        time.Time                `json:"time"`
	UptimeS     float64                  `json:"uptime_s"`
	IntervalS   float64                  `json:"interval_s"` // the interval the rates are over; 0 before two samples
	Info        Info                     `json:"info"`
	Phase       string                   `json:"phase"` // the last boot milestone reached, "" if none
	Phases      []linuxguest.PhaseRecord `json:"phases"`
	CPUs        []CPUState               `json:"cpus"`
	Total       Counters                 `json:"total"`
	ExitsPerIPI []IPICost                `json:"exits_per_ipi"`
	// Unattributed sender exits (ipiSend; no IPI sent in their interval)
	// and receiver exits (no delivery in their interval).
	UnattributedSenderExits   float64                    `json:"unattributed_sender_exits"`
	UnattributedReceiverExits float64                    `json:"unattributed_receiver_exits"`
	Platform                  Platform                   `json:"platform"`
	Sections                  []accounting.SectionReport `json:"sections"`
	// Latency is the IPI latency histograms (accounting.Latencies), by
	// stage then destination kind; empty before any IPI.
	Latency []accounting.LatencyReport `json:"ipi_latency"`
	// Devices is each PCI device's MSI-X interrupts per vector and
	// destination CPU (accounting.DeviceReport); empty with no devices.
	Devices []accounting.DeviceReport `json:"devices"`
}

// Platform is accounting's platform counters with the faults by reason
// always present (an empty object rather than absent).
type Platform struct {
	accounting.PlatformReport
	FaultByReason map[string]uint64 `json:"remap_faults_by_reason"` // shadows the embedded omitempty field
}

// Counters are one vCPU's or all vCPUs' counters and rates.
type Counters struct {
	Exits         uint64             `json:"exits"`
	ExitsPerSec   float64            `json:"exits_per_sec"`
	ByCause       map[string]uint64  `json:"by_cause"`
	ByCausePerSec map[string]float64 `json:"by_cause_per_sec"` // non-zero rates only
	ByClassPerSec map[string]float64 `json:"by_class_per_sec"` // every class
	TopCauses     []CauseCount       `json:"top_causes"`       // up to 5: by rate, then by count
	IPISent       map[string]uint64  `json:"ipi_sent"`
	IPIDelivered  map[string]uint64  `json:"ipi_delivered"`
	// IPIs sent (ICR writes) and deliveries (targets reached) per second.
	// A vCPU's deliveries are those of the IPIs it sent: who received is
	// not counted per vCPU (its injections are).
	IPIsSentPerSec      float64 `json:"ipis_sent_per_sec"`
	IPIsDeliveredPerSec float64 `json:"ipis_delivered_per_sec"`
	InjectedPerSec      float64 `json:"injected_per_sec"`
	// Accounting's event counters (injected, kicks_sent, wakeups, ...),
	// under the report's JSON names: a counter declared there is here too.
	accounting.CPUCounters[uint64]
	// (LAPIC EOI + kick + HLT exits) / injected vectors, 0 before any.
	ReceiverExitsPerInjection float64 `json:"receiver_exits_per_injection"`
}

// CauseCount is one exit cause of a top list.
type CauseCount struct {
	Cause  string  `json:"cause"`
	Exits  uint64  `json:"exits"`
	PerSec float64 `json:"per_sec"`
}

// CPUState is one vCPU: its counters, where it is, its LAPIC.
type CPUState struct {
	CPU   int    `json:"cpu"`
	State string `json:"state"`
	Counters
	APIC APICState `json:"apic"`
}

// APICState is the part of a LAPIC worth watching live. Vectors are lists
// of numbers, lowest first.
type APICState struct {
	ID    uint32    `json:"id"`
	LDR   uint32    `json:"ldr"`
	Mode  string    `json:"mode"` // disabled, xapic, x2apic
	TPR   uint32    `json:"tpr"`
	PPR   uint32    `json:"ppr"`
	IRR   []int     `json:"irr"`
	ISR   []int     `json:"isr"`
	TMR   []int     `json:"tmr"`
	Timer TimerView `json:"timer"`
}

// TimerView is the LAPIC timer.
type TimerView struct {
	Mode    string `json:"mode"` // oneshot, periodic, tsc-deadline
	Armed   bool   `json:"armed"`
	Initial uint32 `json:"initial"`
	Current uint32 `json:"current"`
}

func apicState(s vlapic.State) APICState {
	modes := map[vlapic.Mode]string{vlapic.ModeDisabled: "disabled", vlapic.ModeXAPIC: "xapic", vlapic.ModeX2APIC: "x2apic"}
	timers := map[vlapic.TimerMode]string{vlapic.TimerOneShot: "oneshot", vlapic.TimerPeriodic: "periodic",
		vlapic.TimerTSCDeadline: "tsc-deadline"}
	return APICState{ID: s.ID, LDR: s.LDR, Mode: modes[s.Mode], TPR: s.TPR, PPR: s.PPR,
		IRR: vectors(s.IRR), ISR: vectors(s.ISR), TMR: vectors(s.TMR),
		Timer: TimerView{Mode: timers[s.Timer.Mode], Armed: s.Timer.Armed, Initial: s.Timer.Initial, Current: s.Timer.Current}}
}

// vectors lists the set bits of a 256-bit register (bit v%32 of word v/32).
func vectors(r [8]uint32) []int {
	out := []int{}
	for w, bitsSet := range r {
		for bitsSet != 0 {
			b := bits.TrailingZeros32(bitsSet)
			out = append(out, w*32+b)
			bitsSet &^= 1 << b
		}
	}
	return out
}

// counters fills Counters from a live report entry and the rates between
// two sampled report entries (prev nil: no rates yet).
func counters(live accounting.CPUReport, prev, cur *accounting.CPUReport, dt float64) Counters {
	c := Counters{Exits: live.Exits, ByCause: nonNil(live.ByCause), ByCausePerSec: map[string]float64{},
		ByClassPerSec: map[string]float64{}, IPISent: nonNil(live.IPISent), IPIDelivered: nonNil(live.IPIDelivered),
		CPUCounters: live.CPUCounters}
	for _, n := range classNames {
		c.ByClassPerSec[n] = 0
	}
	recv := byClass(live.ByCause)
	if live.Injected > 0 {
		c.ReceiverExitsPerInjection = float64(recv[classEOI]+recv[classKick]+recv[classHLT]) / float64(live.Injected)
	}
	if prev != nil && cur != nil && dt > 0 {
		rate := func(a, b uint64) float64 { return float64(delta(a, b)) / dt }
		c.ExitsPerSec = rate(cur.Exits, prev.Exits)
		for cause, n := range cur.ByCause {
			if r := rate(n, prev.ByCause[cause]); r > 0 {
				c.ByCausePerSec[cause] = r
				c.ByClassPerSec[classOf(cause).String()] += r
			}
		}
		c.IPIsSentPerSec = rate(sumMap(cur.IPISent), sumMap(prev.IPISent))
		c.IPIsDeliveredPerSec = rate(sumMap(cur.IPIDelivered), sumMap(prev.IPIDelivered))
		c.InjectedPerSec = rate(cur.Injected, prev.Injected)
	}
	c.TopCauses = topCauses(c.ByCause, c.ByCausePerSec, 5)
	return c
}

// topCauses orders causes by their current rate, then by their count: a
// busy cause now matters more than one that was busy during boot.
func topCauses(total map[string]uint64, rate map[string]float64, n int) []CauseCount {
	out := make([]CauseCount, 0, len(total))
	for c, v := range total {
		out = append(out, CauseCount{Cause: c, Exits: v, PerSec: rate[c]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PerSec != out[j].PerSec {
			return out[i].PerSec > out[j].PerSec
		}
		if out[i].Exits != out[j].Exits {
			return out[i].Exits > out[j].Exits
		}
		return out[i].Cause < out[j].Cause
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

func nonNil(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}

func sumMap(m map[string]uint64) uint64 {
	var t uint64
	for _, n := range m {
		t += n
	}
	return t
}
