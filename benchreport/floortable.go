package benchreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// FloorRow is one kind of exit in 'govmm bench-exits': the same guest loop
// timed under the minimal C VMM (the floor) and under govmm, rep by rep.
type FloorRow struct {
	Kind  string // port, mmio or msr (floorloop.S)
	Cause string // the accounting cause govmm counted for the loop's exits
	Count uint64 // exits per loop
	// Floor and Govmm are each repetition's guest TSC cycles over the
	// loop, measured alternately in one run.
	Floor, Govmm []uint64
	// GovmmExits is govmm's count of the loop's exits of Cause, per
	// repetition (each must be Count).
	GovmmExits []uint64
}

// median of v (the mean of the middle two for an even count).
func median(v []uint64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (float64(s[n/2-1]) + float64(s[n/2])) / 2
	}
	return float64(s[len(s)/2])
}

// FloorPerExit and GovmmPerExit are the median cycles per exit.
func (r FloorRow) FloorPerExit() float64 { return median(r.Floor) / float64(max(r.Count, 1)) }
func (r FloorRow) GovmmPerExit() float64 { return median(r.Govmm) / float64(max(r.Count, 1)) }

// Ratio is govmm's median cost per exit over the floor's.
func (r FloorRow) Ratio() float64 {
	if f := r.FloorPerExit(); f > 0 {
		return r.GovmmPerExit() / f
	}
	return 0
}

// BestRatio is govmm's fastest repetition over the floor's fastest.
func (r FloorRow) BestRatio() float64 {
	if len(r.Floor) == 0 || len(r.Govmm) == 0 {
		return 0
	}
	return float64(slices.Min(r.Govmm)) / float64(slices.Min(r.Floor))
}

// FloorTable is the result of one 'govmm bench-exits' run.
type FloorTable struct {
	Rows []FloorRow
	Note string
}

// WriteMarkdown writes the note and the table.
func (t *FloorTable) WriteMarkdown(w io.Writer) {
	writeHead(w, "govmm bench-exits: the cost of one exit, govmm over the floor", t.Note)
	t.WriteTable(w)
}

// WriteTable writes the Markdown table alone.
func (t *FloorTable) WriteTable(w io.Writer) {
	writeHeader(w, "llrrrrrr", "exit", "govmm's cause", "exits/loop", "reps", "floor cycles/exit", "govmm cycles/exit",
		"govmm / floor (median)", "(best of each)")
	for _, r := range t.Rows {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %.0f | %.3f | %.3f |\n", r.Kind, r.Cause, r.Count, len(r.Floor),
			r.FloorPerExit(), r.GovmmPerExit(), r.Ratio(), r.BestRatio())
	}
}

// WriteCSV writes one line per kind and repetition.
func (t *FloorTable) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"kind", "cause", "count", "rep", "floor_cycles", "govmm_cycles", "govmm_exits"})
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, r := range t.Rows {
		for i := range r.Floor {
			var g, e uint64
			if i < len(r.Govmm) {
				g = r.Govmm[i]
			}
			if i < len(r.GovmmExits) {
				e = r.GovmmExits[i]
			}
			cw.Write([]string{r.Kind, r.Cause, u(r.Count), strconv.Itoa(i), u(r.Floor[i]), u(g), u(e)})
		}
	}
	cw.Flush()
	return cw.Error()
}
