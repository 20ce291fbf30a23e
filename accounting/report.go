package accounting

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/govmm/govmm/exitcause"
)

// Report is the accounting of a finished (or running) VM in a form for
// people and programs. Only non-zero counters appear in its maps.
type Report struct {
	// Delivery is the interrupt delivery path: "plain" or "avic" (empty
	// when the VM did not say).
	Delivery string `json:"delivery,omitempty"`
	// HaltPoll is how halted vCPUs polled before sleeping (accounting.VM).
	HaltPoll string          `json:"halt_poll,omitempty"`
	CPUs     []CPUReport     `json:"cpus"`
	Total    CPUReport       `json:"total"`
	Sections []SectionReport `json:"sections,omitempty"`
	Platform PlatformReport  `json:"platform"`
	// Latency is the IPI latency histograms that counted anything
	// (Latencies), by stage then destination kind.
	Latency  []LatencyReport   `json:"ipi_latency,omitempty"`
	KVMStats map[string]uint64 `json:"kvm_stats,omitempty"`
	// Devices is each PCI device's MSI-X interrupts per vector and CPU.
	Devices []DeviceReport `json:"devices,omitempty"`
	// LAPIC says whose local APIC the VM had ("govmm" or "kvm"; empty
	// when the VM did not say): under "kvm" the exits KVM serves are in
	// the sections' KVM counts only.
	LAPIC string `json:"lapic,omitempty"`
}

// CPUReport is one vCPU's (or the total's) counters.
type CPUReport struct {
	CPU          int               `json:"cpu"`
	Exits        uint64            `json:"exits"`
	ByCause      map[string]uint64 `json:"by_cause"`
	IPISent      map[string]uint64 `json:"ipi_sent,omitempty"`
	IPIDelivered map[string]uint64 `json:"ipi_delivered,omitempty"`
	// IPIRecvExits are the exits IPIs to this vCPU caused, by kind
	// (VCPU.IPIRecvExits).
	IPIRecvExits map[string]uint64 `json:"ipi_receiver_exits,omitempty"`
	// InjectedVec counts injections by vector ("0xfb"), non-zero ones only.
	InjectedVec map[string]uint64 `json:"injected_by_vector,omitempty"`
	CPUCounters[uint64]
}

// SectionReport is one measured section.
type SectionReport struct {
	ID    int         `json:"id"`
	CPUs  []CPUReport `json:"cpus"`
	Total CPUReport   `json:"total"`
	// KVM is KVM's statistics over the section per vCPU, by name (only
	// non-zero ones), when the VM recorded them (VM.KVM: KVM's LAPIC),
	// the marker's own exits left out of "exits"; KVMTotal their sums.
	KVM      []map[string]uint64 `json:"kvm,omitempty"`
	KVMTotal map[string]uint64   `json:"kvm_total,omitempty"`
	KVMErr   string              `json:"kvm_error,omitempty"`
}

func cpuReport(cpu int, s Snapshot) CPUReport {
	r := CPUReport{CPU: cpu, Exits: s.Total(), ByCause: map[string]uint64{}, CPUCounters: s.CPUCounters}
	for c, n := range s.Exits {
		if n != 0 {
			r.ByCause[exitcause.Cause(c).String()] = n
		}
	}
	for v, n := range s.InjectedVec {
		if n != 0 {
			if r.InjectedVec == nil {
				r.InjectedVec = map[string]uint64{}
			}
			r.InjectedVec[fmt.Sprintf("%#02x", v)] = n
		}
	}
	for k := range s.IPISent {
		if s.IPISent[k] != 0 {
			if r.IPISent == nil {
				r.IPISent, r.IPIDelivered = map[string]uint64{}, map[string]uint64{}
			}
			r.IPISent[IPIKind(k).String()] = s.IPISent[k]
			r.IPIDelivered[IPIKind(k).String()] = s.IPIDelivered[k]
		}
		if s.IPIRecvExits[k] != 0 {
			if r.IPIRecvExits == nil {
				r.IPIRecvExits = map[string]uint64{}
			}
			r.IPIRecvExits[IPIKind(k).String()] = s.IPIRecvExits[k]
		}
	}
	return r
}

func sum(snaps []Snapshot) Snapshot {
	var t Snapshot
	for i := range snaps {
		t.add(&snaps[i])
	}
	return t
}

func cpuReports(snaps []Snapshot) ([]CPUReport, CPUReport) {
	out := make([]CPUReport, len(snaps))
	for i, s := range snaps {
		out[i] = cpuReport(i, s)
	}
	return out, cpuReport(-1, sum(snaps))
}

// Report builds the report of the VM's counters now.
func (a *VM) Report() Report {
	r := Report{Delivery: a.Delivery, HaltPoll: a.HaltPoll, LAPIC: a.LAPIC}
	r.CPUs, r.Total = cpuReports(a.Snapshot())
	r.Platform = a.Platform.Report()
	r.Latency = a.Latency.Report()
	for _, d := range a.Devices {
		r.Devices = append(r.Devices, d.Report())
	}
	for _, s := range a.Sections() {
		sr := SectionReport{ID: s.ID, KVMErr: s.KVMErr}
		sr.CPUs, sr.Total = cpuReports(s.CPUs)
		sr.KVM, sr.KVMTotal = kvmReports(s.KVM)
		r.Sections = append(r.Sections, sr)
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// Column groups of the per-vCPU table: each is a set of cause classes;
// the "other" column is the exits in none of them.
var tableColumns = []struct {
	name    string
	classes []exitcause.Class
}{
	{"icr", []exitcause.Class{exitcause.ClassICR, exitcause.ClassSelfIPI}},
	{"pv-ipi", []exitcause.Class{exitcause.ClassPVIPI}},
	{"eoi", []exitcause.Class{exitcause.ClassEOI}},
	{"apic-other", []exitcause.Class{exitcause.ClassAPICOther}},
	{"pio", []exitcause.Class{exitcause.ClassPIO}},
	{"hlt", []exitcause.Class{exitcause.ClassHLT}},
	{"irq-win", []exitcause.Class{exitcause.ClassIRQWindow}},
	{"kick", []exitcause.Class{exitcause.ClassKick, exitcause.ClassKickSpurious}},
	{"recover", []exitcause.Class{exitcause.ClassRecover}},
}

// counterColumns are the vCPU counters with a column of their own in the
// per-vCPU table, after the exits and IPIs sent.
var counterColumns = func() []Counter {
	var out []Counter
	for _, k := range CPUCounterTable {
		if k.Column != "" {
			out = append(out, k)
		}
	}
	return out
}()

func writeCPUTable(w io.Writer, cpus []CPUReport, total CPUReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "vCPU\texits\t")
	for _, c := range tableColumns {
		fmt.Fprintf(tw, "%s\t", c.name)
	}
	fmt.Fprint(tw, "other\tipi-sent\t")
	for _, k := range counterColumns {
		fmt.Fprintf(tw, "%s\t", k.Column)
	}
	fmt.Fprint(tw, "\n")
	row := func(label string, r CPUReport) {
		fmt.Fprintf(tw, "%s\t%d\t", label, r.Exits)
		var grouped uint64
		byClass := r.ByClass()
		for _, c := range tableColumns {
			var n uint64
			for _, k := range c.classes {
				n += byClass[k]
			}
			grouped += n
			fmt.Fprintf(tw, "%d\t", n)
		}
		var sent uint64
		for _, n := range r.IPISent {
			sent += n
		}
		fmt.Fprintf(tw, "%d\t%d\t", r.Exits-grouped, sent)
		for _, k := range counterColumns {
			fmt.Fprintf(tw, "%d\t", *r.At(k))
		}
		fmt.Fprint(tw, "\n")
	}
	for _, r := range cpus {
		row(fmt.Sprint(r.CPU), r)
	}
	row("all", total)
	tw.Flush()
}

func writeCounts(w io.Writer, title string, m map[string]uint64) {
	if len(m) == 0 {
		return
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if m[names[i]] != m[names[j]] {
			return m[names[i]] > m[names[j]]
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, n := range names {
		fmt.Fprintf(tw, "  %s\t%d\n", n, m[n])
	}
	tw.Flush()
}

// writeListed writes the counters of table with a Listed name in group
// ("" for the scope's own list) under title, unless all are zero; it says
// whether it wrote them.
func writeListed(w io.Writer, title, group string, table []Counter, at func(Counter) *uint64) bool {
	m := map[string]uint64{}
	var nonzero uint64
	for _, k := range table {
		if k.Listed != "" && k.Group == group {
			m[k.Listed] = *at(k)
			nonzero |= *at(k)
		}
	}
	if nonzero == 0 {
		return false
	}
	writeCounts(w, title, m)
	return true
}

// haltPolling is the group of the halt-polling counters (CPUCounters).
const haltPolling = "halt polling"

// ipiExits is the group of the CPUCounters.IPIRecv* counters.
const ipiExits = "receivers' exits caused by IPIs"

// deviceExits is the group of the CPUCounters.DeviceIRQ* counters.
const deviceExits = "receivers' exits caused by device MSIs"

// WriteTable prints the delivery path, the per-vCPU table, the exits by cause, the IPIs by
// destination kind and each measured section.
func (r Report) WriteTable(w io.Writer) {
	if r.LAPIC == "kvm" {
		fmt.Fprintln(w, "local APIC: KVM's in-kernel one (--lapic=kvm): the exits it serves are counted by KVM, in the sections' KVM tables")
	}
	if r.Delivery != "" {
		fmt.Fprintf(w, "delivery: %s\n", r.Delivery)
	}
	if r.HaltPoll != "" {
		fmt.Fprintf(w, "halt polling: %s\n", r.HaltPoll)
	}
	fmt.Fprintln(w, "exits per vCPU")
	writeCPUTable(w, r.CPUs, r.Total)
	writeCounts(w, "exits by cause (all vCPUs)", r.Total.ByCause)
	writeCounts(w, "IPIs sent, by destination kind (ICR writes)", r.Total.IPISent)
	writeCounts(w, "IPI deliveries, by destination kind (targets reached)", r.Total.IPIDelivered)
	writeIPIExits(w, r.Total.IPIExits())
	writeLatency(w, r.Latency)
	writeListed(w, "interrupts ended or taken back without an exit", "", CPUCounterTable, r.Total.At)
	writeListed(w, haltPolling, haltPolling, CPUCounterTable, r.Total.At)
	writeListed(w, ipiExits, ipiExits, CPUCounterTable, r.Total.At)
	writeListed(w, deviceExits, deviceExits, CPUCounterTable, r.Total.At)
	// The platform's counters stay zero until an IOAPIC entry fires or a
	// device sends an MSI (the others count what became of those), and so
	// do the faults by reason: they are listed together or not at all.
	if writeListed(w, "device interrupts", "", PlatformCounterTable, r.Platform.At) {
		writeCounts(w, "interrupt-remapping faults by reason", r.Platform.FaultByReason)
	}
	WriteDeviceTable(w, r.Devices)
	for _, s := range r.Sections {
		fmt.Fprintf(w, "\nsection %d\n", s.ID)
		writeCPUTable(w, s.CPUs, s.Total)
		writeCounts(w, fmt.Sprintf("section %d exits by cause", s.ID), s.Total.ByCause)
		writeListed(w, fmt.Sprintf("section %d %s", s.ID, deviceExits), deviceExits, CPUCounterTable, s.Total.At)
		writeKVMTable(w, s)
	}
	if len(r.KVMStats) > 0 {
		writeCounts(w, "KVM's own exit statistics (all vCPUs)", r.KVMStats)
	}
}

// kvmReports turns a section's KVM statistics into their report form:
// per vCPU and summed, non-zero ones by name.
func kvmReports(cpus []KVMCounts) ([]map[string]uint64, map[string]uint64) {
	if cpus == nil {
		return nil, nil
	}
	out, total := make([]map[string]uint64, len(cpus)), map[string]uint64{}
	for i, c := range cpus {
		out[i] = map[string]uint64{}
		for k, n := range c {
			if n != 0 {
				out[i][KVMStat(k).String()] = n
				total[KVMStat(k).String()] += n
			}
		}
	}
	return out, total
}

// writeKVMTable writes a section's KVM statistics per vCPU, if it has them.
func writeKVMTable(w io.Writer, s SectionReport) {
	if s.KVMErr != "" {
		fmt.Fprintf(w, "section %d, KVM's statistics: %s\n", s.ID, s.KVMErr)
	}
	if s.KVM == nil {
		return
	}
	fmt.Fprintf(w, "section %d, KVM's statistics (every exit KVM took, the marker's left out)\n", s.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "vCPU\t")
	for k := range NumKVMStats {
		fmt.Fprintf(tw, "%s\t", k)
	}
	fmt.Fprintln(tw)
	row := func(name string, m map[string]uint64) {
		fmt.Fprintf(tw, "%s\t", name)
		for k := range NumKVMStats {
			fmt.Fprintf(tw, "%d\t", m[k.String()])
		}
		fmt.Fprintln(tw)
	}
	for i, m := range s.KVM {
		row(fmt.Sprint(i), m)
	}
	row("all", s.KVMTotal)
	tw.Flush()
}
