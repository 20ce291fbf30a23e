package dashboard

import (
	"strconv"

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
	descInjected     = prometheus.NewDesc("govmm_injected_total", "Vectors injected into the vCPU with KVM_INTERRUPT.", []string{"cpu"}, nil)
	descNMIs         = prometheus.NewDesc("govmm_nmis_injected_total", "NMIs injected into the vCPU.", []string{"cpu"}, nil)
	descKicks        = prometheus.NewDesc("govmm_kicks_total", "Kicks (signal + immediate_exit) aimed at the vCPU.", []string{"cpu"}, nil)
	descWakeups      = prometheus.NewDesc("govmm_wakeups_total", "Times the vCPU left HLT or wait-for-SIPI.", []string{"cpu"}, nil)
	descPVEOIs       = prometheus.NewDesc("govmm_pv_eois_total", "EOIs the guest did through KVM's PV EOI (no exit).", []string{"cpu"}, nil)
	descWithdrawn    = prometheus.NewDesc("govmm_injections_withdrawn_total", "Injections taken back at the SYSCALL doorbell (injected again later).", []string{"cpu"}, nil)
	descState        = prometheus.NewDesc("govmm_vcpu_state", "1 for the state the vCPU is in, 0 for the others.", []string{"cpu", "state"}, nil)
	descTPR          = prometheus.NewDesc("govmm_apic_tpr", "The LAPIC's task priority register.", []string{"cpu"}, nil)
	descPPR          = prometheus.NewDesc("govmm_apic_ppr", "The LAPIC's processor priority register.", []string{"cpu"}, nil)
	descIRR          = prometheus.NewDesc("govmm_apic_irr_vectors", "Vectors requested (IRR bits set) in the LAPIC.", []string{"cpu"}, nil)
	descISR          = prometheus.NewDesc("govmm_apic_isr_vectors", "Vectors in service (ISR bits set) in the LAPIC.", []string{"cpu"}, nil)
	descIOAPICFired  = prometheus.NewDesc("govmm_ioapic_fired_total", "IOAPIC redirection entries fired.", nil, nil)
	descIOAPICLost   = prometheus.NewDesc("govmm_ioapic_lost_total", "IOAPIC interrupts no LAPIC accepted.", nil, nil)
	descMSIs         = prometheus.NewDesc("govmm_msis_total", "MSIs from devices.", nil, nil)
	descRemapped     = prometheus.NewDesc("govmm_remapped_total", "Interrupts translated through an interrupt-remapping table entry.", nil, nil)
	descRemapFaults  = prometheus.NewDesc("govmm_remap_faults_total", "Interrupts the remapping unit blocked, by VT-d fault reason.", []string{"reason"}, nil)
	descDeviceIRQs   = prometheus.NewDesc("govmm_device_irqs_total", "Device interrupts delivered, by destination mode.", []string{"dest_mode"}, nil)
	descSectionExits = prometheus.NewDesc("govmm_section_exits_total", "Exits inside measured section (all vCPUs), by cause.", []string{"section", "cause"}, nil)
	descInfo         = prometheus.NewDesc("govmm_info", "The VM: APIC mode, kernel and interrupt delivery path; always 1.", []string{"mode", "kernel", "delivery"}, nil)
	descCPUs         = prometheus.NewDesc("govmm_vcpus", "Number of vCPUs.", nil, nil)
	descStarted      = prometheus.NewDesc("govmm_start_time_seconds", "When the VM started, in Unix seconds.", nil, nil)
	descPhase        = prometheus.NewDesc("govmm_boot_phase_seconds", "When each boot milestone was reached, in seconds since the VM started.", []string{"phase"}, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descExits, descIPIsSent, descIPIsDeliv, descInjected, descNMIs, descKicks,
		descWakeups, descPVEOIs, descWithdrawn, descState, descTPR, descPPR, descIRR, descISR, descIOAPICFired, descIOAPICLost, descMSIs,
		descRemapped, descRemapFaults, descDeviceIRQs, descSectionExits, descInfo, descCPUs, descStarted, descPhase} {
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
		counter(descInjected, cpu.Injected, id)
		counter(descNMIs, cpu.NMIs, id)
		counter(descKicks, cpu.KicksSent, id)
		counter(descWakeups, cpu.Wakeups, id)
		counter(descPVEOIs, cpu.PVEOIs, id)
		counter(descWithdrawn, cpu.Withdrawn, id)
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
	counter(descIOAPICFired, p.IOAPICFired)
	counter(descIOAPICLost, p.IOAPICLost)
	counter(descMSIs, p.MSIs)
	counter(descRemapped, p.Remapped)
	var byReason uint64
	for reason, n := range p.FaultByReason {
		counter(descRemapFaults, n, reason)
		byReason += n
	}
	// Reasons past accounting.MaxFaultReason are only in the total.
	if p.RemapFaults > byReason {
		counter(descRemapFaults, p.RemapFaults-byReason, "other")
	}
	counter(descDeviceIRQs, p.DevicePhysical, "physical")
	counter(descDeviceIRQs, p.DeviceLogical, "logical")
	// A guest may measure the same section id more than once: one series
	// per id, summed, or the scrape would hold duplicates.
	type secCause struct {
		id    int
		cause string
	}
	secs := map[secCause]uint64{}
	for _, s := range r.Sections {
		for cause, n := range s.Total.ByCause {
			secs[secCause{s.ID, cause}] += n
		}
	}
	for k, n := range secs {
		counter(descSectionExits, n, strconv.Itoa(k.id), k.cause)
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
