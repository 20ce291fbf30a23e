// Package benchreport turns 'govmm bench' runs into a report: a Markdown
// table, a CSV file and SVG plots of exits per operation and cycles per
// operation against the number of CPUs, one line per APIC mode. On an
// emulating host cycles are emulation times, so the report leads with exits.
// WriteDistributionSVG plots how repeated samples of a measure spread, per
// mode, beside an exact count per mode. The plots are drawn with gonum/plot.
//
// IPITable is the bare-metal counterpart ('govmm bench-ipi'): exits per IPI
// of the sender and of the receivers, per APIC mode, delivery path and
// destination count, each against the minimum the guest code allows.
package benchreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Row is one measured section of one boot.
type Row struct {
	Mode       string  // e.g. "cluster", "mixed+pv-ipi"
	CPUs       int     // vCPUs of the VM
	Section    int     // 1 unicast, 2 call-function-all, 3 flush_tlb_all
	Kind       string  // the section's name
	Ops        int     // operations in the section
	SenderExit float64 // exits per op on the vCPU that ran the benchmark
	RecvExit   float64 // exits per op on all other vCPUs together
	ICRPerOp   float64 // ICR/SELF_IPI/PV-IPI exits per op on the sender
	Cycles     float64 // guest TSC cycles per op (emulation time on emulating hosts)
	// RecvCauses are the receivers' exits per op by cause, the largest
	// first ("msr_x2apic_eoi_write 1.00 hlt 1.00"): what the receivers'
	// count is made of.
	RecvCauses string
}

// Total is the exits per operation on all vCPUs.
func (r Row) Total() float64 { return r.SenderExit + r.RecvExit }

// Report is every row of a bench run.
type Report struct {
	Rows      []Row
	Emulating bool // the host interprets guest kernel code
	Note      string
}

func (rep *Report) sorted() []Row {
	rows := append([]Row(nil), rep.Rows...)
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Section != b.Section {
			return a.Section < b.Section
		}
		if a.Mode != b.Mode {
			return a.Mode < b.Mode
		}
		return a.CPUs < b.CPUs
	})
	return rows
}

// WriteMarkdown writes the report as Markdown tables, one per section.
func (rep *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintln(w, "# govmm bench: exits per IPI operation")
	fmt.Fprintln(w)
	if rep.Emulating {
		fmt.Fprintln(w, "This host's KVM interprets guest kernel code: **exit counts are exact and carry over to real hosts; cycles are emulation times** and only comparable within this report.")
		fmt.Fprintln(w)
	}
	if rep.Note != "" {
		fmt.Fprintln(w, rep.Note)
		fmt.Fprintln(w)
	}
	sec := -1
	for _, r := range rep.sorted() {
		if r.Section != sec {
			sec = r.Section
			fmt.Fprintf(w, "\n## Section %d: %s\n\n", r.Section, r.Kind)
			writeHeader(w, "lrrrrrrrl", "mode", "vCPUs", "ops", "exits/op (all)", "sender exits/op", "ICR-class exits/op",
				"receiver exits/op", "cycles/op", "receiver exits/op by cause")
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.0f | %s |\n",
			r.Mode, r.CPUs, r.Ops, r.Total(), r.SenderExit, r.ICRPerOp, r.RecvExit, r.Cycles, r.RecvCauses)
	}
}

// WriteCSV writes one line per row.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"mode", "cpus", "section", "kind", "ops", "exits_per_op", "sender_exits_per_op",
		"icr_exits_per_op", "receiver_exits_per_op", "cycles_per_op", "receiver_causes_per_op"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range rep.sorted() {
		cw.Write([]string{r.Mode, strconv.Itoa(r.CPUs), strconv.Itoa(r.Section), r.Kind, strconv.Itoa(r.Ops),
			f(r.Total()), f(r.SenderExit), f(r.ICRPerOp), f(r.RecvExit), f(r.Cycles), r.RecvCauses})
	}
	cw.Flush()
	return cw.Error()
}
