package dashboard

import (
	"strconv"

	"github.com/govmm/govmm/accounting"
	"github.com/prometheus/client_golang/prometheus"
)

// collector exposes the Source's counters to Prometheus. It keeps nothing:
// every scrape reads the accounting's atomics (through Report) and the
// vCPU states, so /metrics costs the scraper, never the exit path.
type collector struct{ src Source }

// vcpuStates are the values govmm_vcpu_state{state} takes; every one is
// exported (0 or 1) so that a state's series exist before it is entered.
var vcpuStates = []string{"vmm", "guest", "halted", "wait-for-sipi", "stopped"}

var (
	descExits        = prometheus.NewDesc("govmm_exits_total", "VM exits by vCPU and cause.", []string{"cpu", "cause"}, nil)
	descIPIsSent     = prometheus.NewDesc("govmm_ipis_sent_total", "IPIs sent (ICR writes that sent one) by sending vCPU and destination kind.", []string{"cpu", "kind"}, nil)
	descIPIsDeliv    = prometheus.NewDesc("govmm_ipis_delivered_total", "IPI deliveries (targets reached) by sending vCPU and destination kind.", []string{"cpu", "kind"}, nil)
	descState        = prometheus.NewDesc("govmm_vcpu_state", "1 for the state the vCPU is in, 0 for the others.", []string{"cpu", "state"}, nil)
	descTPR          = prometheus.NewDesc("govmm_apic_tpr", "The LAPIC's task priority register.", []string{"cpu"}, nil)
	descPPR          = prometheus.NewDesc("govmm_apic_ppr", "The LAPIC's processor priority register.", []string{"cpu"}, nil)
	descIRR          = prometheus.NewDesc("govmm_apic_irr_vectors", "Vectors requested (IRR bits set) in the LAPIC.", []string{"cpu"}, nil)
	descISR          = prometheus.NewDesc("govmm_apic_isr_vectors", "Vectors in service (ISR bits set) in the LAPIC.", []string{"cpu"}, nil)
	descRemapFaults  = prometheus.NewDesc("govmm_remap_faults_total", "Interrupts the remapping unit blocked, by VT-d fault reason.", []string{"reason"}, nil)
	descSectionExits = prometheus.NewDesc("govmm_section_exits_total", "Exits inside measured section (all vCPUs), by cause.", []string{"section", "cause"}, nil)
	descSectionKVM   = prometheus.NewDesc("govmm_section_kvm_stat_total", "KVM's own per-vCPU statistics over a measured section (all vCPUs; VMs on KVM's LAPIC, --lapic=kvm), by statistic.", []string{"section", "stat"}, nil)
	descInfo         = prometheus.NewDesc("govmm_info", "The VM: APIC mode, kernel and interrupt delivery path; always 1.", []string{"mode", "kernel", "delivery"}, nil)
	descCPUs         = prometheus.NewDesc("govmm_vcpus", "Number of vCPUs.", nil, nil)
	descStarted      = prometheus.NewDesc("govmm_start_time_seconds", "When the VM started, in Unix seconds.", nil, nil)
	descPhase        = prometheus.NewDesc("govmm_boot_phase_seconds", "When each boot milestone was reached, in seconds since the VM started.", []string{"phase"}, nil)
	descDeviceIRQs   = prometheus.NewDesc("govmm_device_msix_interrupts_total", "PCI devices' MSI-X messages accepted, by device, vector (MSI-X table entry) and destination vCPU.", []string{"device", "address", "vector", "cpu"}, nil)
	descQueueEvents  = prometheus.NewDesc("govmm_virtqueue_events_total", "virtio devices' virtqueue events, by device, queue and event: kicks (driver notifications), completed (chains on the used ring), interrupts (sent), suppressed (interrupts the driver's event index coalesced away), bad_chains.", []string{"device", "address", "queue", "event"}, nil)
	descDeviceHeld   = prometheus.NewDesc("govmm_device_msix_undelivered_total", "PCI devices' MSI-X messages not delivered, by device, vector and what became of them (pended while masked, dropped while MSI-X was off, refused by remapping or the APICs).", []string{"device", "address", "vector", "outcome"}, nil)
	descLatency      = prometheus.NewDesc("govmm_ipi_latency_seconds", "IPI latency from the send to a stage on the target (accepted, injected, ended), by destination kind.", []string{"kind", "stage"}, nil)
)

// counterMetric is an accounting counter with a Prometheus family.
type counterMetric struct {
	accounting.Counter
	desc *prometheus.Desc
}

// cpuMetrics and platformMetrics export the counters of
// accounting.CPUCounterTable and PlatformCounterTable that name a family;
// counterFamilies describes each family once, however many counters (one
// a label value) share it.
var cpuMetrics, platformMetrics, counterFamilies = func() (cpu, platform []counterMetric, families map[string]*prometheus.Desc) {
	families = map[string]*prometheus.Desc{}
	metrics := func(table []accounting.Counter, labels ...string) []counterMetric {
		var out []counterMetric
		for _, k := range table {
			if k.Metric == "" {
				continue
			}
			d, ok := families[k.Metric]
			if !ok {
				l := labels
				if k.Label.Name != "" {
					l = append(l[:len(l):len(l)], k.Label.Name)
				}
				d = prometheus.NewDesc(k.Metric, k.Help, l, nil)
				families[k.Metric] = d
			}
			out = append(out, counterMetric{k, d})
		}
		return out
	}
	return metrics(accounting.CPUCounterTable, "cpu"), metrics(accounting.PlatformCounterTable), families
}()

// collect sends the counter's value v; labels are those of its scope (the
// cpu of a vCPU counter), its own label value follows.
func (m counterMetric) collect(ch chan<- prometheus.Metric, v uint64, labels ...string) {
	t := prometheus.CounterValue
	if m.Kind == accounting.KindGauge {
		t = prometheus.GaugeValue
	}
	if m.Label.Name != "" {
		labels = append(labels, m.Label.Value)
	}
	ch <- prometheus.MustNewConstMetric(m.desc, t, float64(v)*m.Scale, labels...)
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descExits, descIPIsSent, descIPIsDeliv, descState, descTPR, descPPR, descIRR, descISR,
		descRemapFaults, descSectionExits, descSectionKVM, descInfo, descCPUs, descStarted, descPhase, descLatency, descDeviceIRQs, descDeviceHeld, descQueueEvents} {
		ch <- d
	}
	for _, d := range counterFamilies {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	r := c.src.Report()
	for _, l := range r.Latency {
		ch <- latencyHistogram(l)
	}
	for _, cpu := range r.CPUs {
		id := strconv.Itoa(cpu.CPU)
		// Only causes that happened: 280-odd causes times every vCPU of
		// zeros would drown the scrape.
		for cause, n := range cpu.ByCause {
			counter(descExits, n, id, cause)
		}
		for kind, n := range cpu.IPISent {
			counter(descIPIsSent, n, id, kind)
		}
		for kind, n := range cpu.IPIDelivered {
			counter(descIPIsDeliv, n, id, kind)
		}
		for _, m := range cpuMetrics {
			m.collect(ch, *cpu.At(m.Counter), id)
		}
	}
	for _, v := range c.src.CPUs() {
		id := strconv.Itoa(v.CPU)
		for _, s := range vcpuStates {
			val := 0.0
			if s == v.State {
				val = 1
			}
			gauge(descState, val, id, s)
		}
		a := apicState(v.APIC)
		gauge(descTPR, float64(a.TPR), id)
		gauge(descPPR, float64(a.PPR), id)
		gauge(descIRR, float64(len(a.IRR)), id)
		gauge(descISR, float64(len(a.ISR)), id)
	}
	p := r.Platform
	for _, m := range platformMetrics {
		m.collect(ch, *p.At(m.Counter))
	}
	var byReason uint64
	for reason, n := range p.FaultByReason {
		counter(descRemapFaults, n, reason)
		byReason += n
	}
	// Reasons past accounting.MaxFaultReason are only in the total.
	if p.RemapFaults > byReason {
		counter(descRemapFaults, p.RemapFaults-byReason, "other")
	}
	for _, d := range r.Devices {
		for _, v := range d.Vectors {
			vec := strconv.Itoa(v.Vector)
			for cpu, n := range v.ByCPU {
				if n != 0 {
					counter(descDeviceIRQs, n, d.Name, d.Address, vec, strconv.Itoa(cpu))
				}
			}
			for _, o := range []struct {
				name string
				n    uint64
			}{{"pended", v.Pended}, {"dropped", v.Dropped}, {"refused", v.Refused}} {
				counter(descDeviceHeld, o.n, d.Name, d.Address, vec, o.name)
			}
		}
		for _, q := range d.Queues {
			queue := strconv.Itoa(q.Queue)
			for _, e := range []struct {
				name string
				n    uint64
			}{{"kicks", q.Kicks}, {"completed", q.Completed}, {"interrupts", q.Interrupts}, {"suppressed", q.Suppressed}, {"bad_chains", q.BadChains}} {
				counter(descQueueEvents, e.n, d.Name, d.Address, queue, e.name)
			}
		}
	}
	// A guest may measure the same section id more than once: one series
	// per id, summed, or the scrape would hold duplicates.
	type secCause struct {
		id    int
		cause string
	}
	secs, kvmStats := map[secCause]uint64{}, map[secCause]uint64{}
	for _, s := range r.Sections {
		for cause, n := range s.Total.ByCause {
			secs[secCause{s.ID, cause}] += n
		}
		for stat, n := range s.KVMTotal {
			kvmStats[secCause{s.ID, stat}] += n
		}
	}
	for k, n := range secs {
		counter(descSectionExits, n, strconv.Itoa(k.id), k.cause)
	}
	for k, n := range kvmStats {
		counter(descSectionKVM, n, strconv.Itoa(k.id), k.cause)
	}
	info := c.src.Info()
	gauge(descInfo, 1, info.Mode, info.Kernel, info.Delivery)
	gauge(descCPUs, float64(len(r.CPUs)))
	if !info.Started.IsZero() {
		gauge(descStarted, float64(info.Started.UnixNano())/1e9)
	}
	for _, ph := range c.src.Phases() {
		gauge(descPhase, ph.At.Seconds(), ph.Name)
	}
}

// latencyHistogram is one accounting latency histogram as a Prometheus
// histogram: cumulative buckets at each bound, in seconds.
func latencyHistogram(l accounting.LatencyReport) prometheus.Metric {
	buckets := map[float64]uint64{}
	var cum uint64
	for _, b := range l.Buckets {
		cum += b.Count
		if b.LeNs != 0 {
			buckets[float64(b.LeNs)/1e9] = cum
		}
	}
	return prometheus.MustNewConstHistogram(descLatency, l.Count, float64(l.SumNs)/1e9, buckets, l.Kind, l.Stage)
}
