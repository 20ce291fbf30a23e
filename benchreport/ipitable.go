package benchreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// IPIRow is one case of the bare-metal exits-per-IPI table ('govmm
// bench-ipi'): one APIC mode, one delivery path, unicast or a multicast to
// Dests CPUs, measured in one accounting section of ipi.elf.
type IPIRow struct {
	Mode      string // table label: xapic-phys, x2apic-cluster, mixed, pv, ...
	GuestMode string // ipi.elf's mode= (mixed runs x2apic-cluster)
	Delivery  string // plain, pveoi (plain path, guest uses PV EOI) or avic
	Kind      string // "unicast" or "multicast"
	Dests     int    // destination CPUs per IPI (1 for unicast)
	First     int    // a multicast's first APIC ID: it goes to IDs First..First+Dests-1
	CPUs      int    // vCPUs of the VM

	IPIs       uint64 // IPI operations of the sender: unicast sends or multicasts
	Sends      uint64 // ICR (or PV send-IPI) writes that sent them
	Deliveries uint64 // destination CPUs reached, over all IPIs
	SenderExit uint64 // exits of the sender (the BSP) in the section
	RecvExit   uint64 // exits of every other vCPU in the section

	// The receivers' (every other vCPU's) HLT, EOI-write and kick exits and
	// wake-ups in the section, as govmm counted them.
	RecvHLT, RecvEOI, RecvKick, RecvWakeups uint64
	// What ipi.elf's receiving CPUs counted themselves in the section
	// (internal/ipirecv), summed: interrupts taken, HLTs executed,
	// interrupts taken at a HLT, EOIs written, EOIs PV EOI completed.
	GuestIRQs, GuestHLTs, GuestWakes, GuestEOIs, GuestPVEOIs uint64

	SenderMin float64 // the fewest sender exits per IPI the guest mode allows
	RecvMin   float64 // the fewest exits per delivery on a receiver
	// SenderWhy and RecvWhy say why a figure is above its minimum (empty
	// when it is not).
	SenderWhy, RecvWhy string
	// Skipped, when set, says why the case was not measured; the counts
	// are then zero.
	Skipped string
}

// SenderPerIPI is the sender's exits per IPI.
func (r IPIRow) SenderPerIPI() float64 { return ratio(r.SenderExit, r.IPIs) }

// RecvPerDelivery is the exits per destination CPU reached (each receiver's
// share of one IPI).
func (r IPIRow) RecvPerDelivery() float64 { return ratio(r.RecvExit, r.Deliveries) }

// RecvPerIPI is the exits of all receivers together per IPI.
func (r IPIRow) RecvPerIPI() float64 { return ratio(r.RecvExit, r.IPIs) }

// SendsPerIPI is the ICR (or PV) writes per IPI.
func (r IPIRow) SendsPerIPI() float64 { return ratio(r.Sends, r.IPIs) }

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// above is true when v exceeds min (exit counts over whole sections make
// exact ratios; the epsilon only absorbs float rounding).
func above(v, min float64) bool { return v > min+1e-9 }

// IPITable is the result of one 'govmm bench-ipi' run.
type IPITable struct {
	Rows      []IPIRow
	Emulating bool   // the host interprets guest kernel code
	Note      string // how the table was produced (printed under the title)
}

// num prints a ratio: an integer as such, else up to two decimals.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" || s == "-0" {
		return "0"
	}
	return s
}

// lines groups rows as the tables show them: one group per mode and
// delivery path in first-seen order, unicast before multicast, dests
// ascending; cols are the matrix's columns.
func (t *IPITable) lines() (keys []string, rows map[string][]IPIRow, cols []string) {
	rows = map[string][]IPIRow{}
	dests := map[int]bool{}
	uni := false
	for _, r := range t.Rows {
		k := r.Mode + "\x00" + r.Delivery
		if _, ok := rows[k]; !ok {
			keys = append(keys, k)
		}
		rows[k] = append(rows[k], r)
		if r.Kind == "unicast" {
			uni = true
		} else {
			dests[r.Dests] = true
		}
	}
	for _, k := range keys {
		rs := rows[k]
		sort.SliceStable(rs, func(i, j int) bool {
			if (rs[i].Kind == "unicast") != (rs[j].Kind == "unicast") {
				return rs[i].Kind == "unicast"
			}
			return rs[i].Dests < rs[j].Dests
		})
	}
	if uni {
		cols = append(cols, "unicast")
	}
	var ds []int
	for d := range dests {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	for _, d := range ds {
		cols = append(cols, strconv.Itoa(d))
	}
	return keys, rows, cols
}

func (r IPIRow) column() string {
	if r.Kind == "unicast" {
		return "unicast"
	}
	return strconv.Itoa(r.Dests)
}

// footnotes numbers distinct reasons in order of first use.
type footnotes struct {
	text []string
	idx  map[string]int
}

func (f *footnotes) mark(reason string) string {
	if f.idx == nil {
		f.idx = map[string]int{}
	}
	i, ok := f.idx[reason]
	if !ok {
		f.text = append(f.text, reason)
		i = len(f.text)
		f.idx[reason] = i
	}
	return fmt.Sprintf(" [%d]", i)
}

// WriteMatrix writes the compact table: one line per mode and delivery
// path, one column per kind of IPI, each cell "sender / receiver" (sender
// exits per IPI / exits per receiving CPU), a [n] mark where a figure is
// above the minimum, and the numbered reasons below.
func (t *IPITable) WriteMatrix(w io.Writer) {
	keys, rows, cols := t.lines()
	var fn footnotes
	head := []string{"mode", "delivery"}
	for _, c := range cols {
		if c != "unicast" {
			c = "multicast " + c
		}
		head = append(head, c)
	}
	writeHeader(w, "ll"+strings.Repeat("r", len(cols)), head...)
	for _, k := range keys {
		rs := rows[k]
		fmt.Fprintf(w, "| %s | %s |", rs[0].Mode, rs[0].Delivery)
		for _, c := range cols {
			cell := ""
			for _, r := range rs {
				if r.column() != c {
					continue
				}
				switch {
				case r.Skipped != "":
					cell = "n/a" + fn.mark(r.Skipped)
				default:
					s := num(r.SenderPerIPI())
					if above(r.SenderPerIPI(), r.SenderMin) {
						s += fn.mark(r.SenderWhy)
					}
					v := num(r.RecvPerDelivery())
					if above(r.RecvPerDelivery(), r.RecvMin) {
						v += fn.mark(r.RecvWhy)
					}
					cell = s + " / " + v
				}
			}
			fmt.Fprintf(w, " %s |", cell)
		}
		fmt.Fprintln(w)
	}
	if len(fn.text) > 0 {
		fmt.Fprintln(w)
		for i, s := range fn.text {
			fmt.Fprintf(w, "[%d] %s  \n", i+1, s)
		}
	}
}

// WriteMarkdown writes the whole report: title, notes, the matrix and one
// line per case with the counts behind it.
func (t *IPITable) WriteMarkdown(w io.Writer) {
	fmt.Fprintln(w, "# govmm bench-ipi: exits per IPI, bare metal (ipi.elf)")
	fmt.Fprintln(w)
	if t.Emulating {
		fmt.Fprintln(w, "This host's KVM interprets guest kernel code: exit counts are exact and carry over to real hosts; no times are reported.")
		fmt.Fprintln(w)
	}
	if t.Note != "" {
		fmt.Fprintln(w, t.Note)
		fmt.Fprintln(w)
	}
	t.WriteMatrix(w)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Every case")
	fmt.Fprintln(w)
	writeHeader(w, "lllrrrrrrrrrrl", "mode", "delivery", "IPI", "dests", "vCPUs", "IPIs", "sends/IPI", "deliveries",
		"sender exits/IPI", "min", "receiver exits/delivery", "min", "receivers' exits/IPI", "above the minimum because")
	keys, rows, _ := t.lines()
	for _, k := range keys {
		for _, r := range rows[k] {
			if r.Skipped != "" {
				fmt.Fprintf(w, "| %s | %s | %s | %d | %d | | | | | | | | | not measured: %s |\n",
					r.Mode, r.Delivery, r.Kind, r.Dests, r.CPUs, r.Skipped)
				continue
			}
			var why []string
			if above(r.SenderPerIPI(), r.SenderMin) {
				why = append(why, "sender: "+r.SenderWhy)
			}
			if above(r.RecvPerDelivery(), r.RecvMin) {
				why = append(why, "receiver: "+r.RecvWhy)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %s | %d | %s | %s | %s | %s | %s | %s |\n",
				r.Mode, r.Delivery, r.Kind, r.Dests, r.CPUs, r.IPIs, num(r.SendsPerIPI()), r.Deliveries,
				num(r.SenderPerIPI()), num(r.SenderMin), num(r.RecvPerDelivery()), num(r.RecvMin),
				num(r.RecvPerIPI()), strings.Join(why, "; "))
		}
	}
}

// WriteCSV writes one line per case, raw counts and ratios.
func (t *IPITable) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"mode", "guest_mode", "delivery", "kind", "dests", "first_apic_id", "cpus", "ipis", "sends", "deliveries",
		"sender_exits", "receiver_exits", "sender_exits_per_ipi", "sender_min", "receiver_exits_per_delivery",
		"receiver_min", "receiver_exits_per_ipi", "sender_above_min_because", "receiver_above_min_because", "skipped",
		"receiver_hlt_exits", "receiver_eoi_exits", "receiver_kicks", "receiver_wakeups",
		"guest_irqs", "guest_hlts", "guest_wakes", "guest_eois", "guest_pv_eois"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	keys, rows, _ := t.lines()
	for _, k := range keys {
		for _, r := range rows[k] {
			sw, rw := "", ""
			if r.Skipped == "" && above(r.SenderPerIPI(), r.SenderMin) {
				sw = r.SenderWhy
			}
			if r.Skipped == "" && above(r.RecvPerDelivery(), r.RecvMin) {
				rw = r.RecvWhy
			}
			cw.Write([]string{r.Mode, r.GuestMode, r.Delivery, r.Kind, strconv.Itoa(r.Dests), strconv.Itoa(r.First), strconv.Itoa(r.CPUs),
				u(r.IPIs), u(r.Sends), u(r.Deliveries), u(r.SenderExit), u(r.RecvExit),
				f(r.SenderPerIPI()), f(r.SenderMin), f(r.RecvPerDelivery()), f(r.RecvMin), f(r.RecvPerIPI()),
				sw, rw, r.Skipped, u(r.RecvHLT), u(r.RecvEOI), u(r.RecvKick), u(r.RecvWakeups),
				u(r.GuestIRQs), u(r.GuestHLTs), u(r.GuestWakes), u(r.GuestEOIs), u(r.GuestPVEOIs)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteTable is the table a bench command prints on stdout: the matrix.
func (t *IPITable) WriteTable(w io.Writer) { t.WriteMatrix(w) }
