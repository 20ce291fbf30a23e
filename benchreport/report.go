// Package benchreport turns 'govmm bench' runs into a report: a Markdown
// table, a CSV file and SVG plots of exits per operation and cycles per
// operation against the number of CPUs, one line per APIC mode. On an
// emulating host cycles are emulation times, so the report leads with exits.
//
// IPITable is the bare-metal counterpart ('govmm bench-ipi'): exits per IPI
// of the sender and of the receivers, per APIC mode, delivery path and
// destination count, each against the minimum the guest code allows.
package benchreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
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
			writeHeader(w, "lrrrrrrr", "mode", "vCPUs", "ops", "exits/op (all)", "sender exits/op", "ICR-class exits/op",
				"receiver exits/op", "cycles/op")
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.0f |\n",
			r.Mode, r.CPUs, r.Ops, r.Total(), r.SenderExit, r.ICRPerOp, r.RecvExit, r.Cycles)
	}
}

// WriteCSV writes one line per row.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"mode", "cpus", "section", "kind", "ops", "exits_per_op", "sender_exits_per_op",
		"icr_exits_per_op", "receiver_exits_per_op", "cycles_per_op"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, r := range rep.sorted() {
		cw.Write([]string{r.Mode, strconv.Itoa(r.CPUs), strconv.Itoa(r.Section), r.Kind, strconv.Itoa(r.Ops),
			f(r.Total()), f(r.SenderExit), f(r.ICRPerOp), f(r.RecvExit), f(r.Cycles)})
	}
	cw.Flush()
	return cw.Error()
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"}

// WriteSVG plots metric (e.g. Row.Total) against vCPUs for one section,
// one line per mode.
func (rep *Report) WriteSVG(w io.Writer, section int, title string, metric func(Row) float64) {
	const W, H, L, B, T, R = 640.0, 400.0, 60.0, 50.0, 40.0, 150.0
	series := map[string][]Row{}
	var modes []string
	maxX, maxY := 1.0, 0.0
	for _, r := range rep.sorted() {
		if r.Section != section {
			continue
		}
		if _, ok := series[r.Mode]; !ok {
			modes = append(modes, r.Mode)
		}
		series[r.Mode] = append(series[r.Mode], r)
		maxX = math.Max(maxX, float64(r.CPUs))
		maxY = math.Max(maxY, metric(r))
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.1
	x := func(v float64) float64 { return L + (W-L-R)*v/maxX }
	y := func(v float64) float64 { return H - B - (H-B-T)*v/maxY }
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="20" font-size="14">%s</text>`+"\n", L, esc(title))
	fmt.Fprintf(w, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`, L, H-B, W-R, H-B)
	fmt.Fprintf(w, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", L, T, L, H-B)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="end">%.1f</text>`, L-5, y(v)+4, v)
	}
	fmt.Fprintf(w, `<text x="%.0f" y="%.0f" text-anchor="middle">vCPUs</text>`+"\n", (L+W-R)/2, H-10)
	for i, m := range modes {
		c := palette[i%len(palette)]
		var pts []string
		for _, r := range series[m] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(r.CPUs)), y(metric(r))))
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, x(float64(r.CPUs)), y(metric(r)), c)
			fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle" font-size="10">%d</text>`, x(float64(r.CPUs)), H-B+14, r.CPUs)
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			W-R+10, T+float64(i)*18, c, W-R+25, T+float64(i)*18+9, esc(m))
	}
	fmt.Fprintln(w, "</svg>")
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
