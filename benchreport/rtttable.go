package benchreport

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// RTTRow is one case of 'govmm bench-rtt': IPI round trips from the BSP to
// APIC ID 1 in one APIC mode and delivery path, to a halted or a spinning
// receiver, with halt polling on or off, measured in one accounting
// section of rtt.elf.
type RTTRow struct {
	Mode      string // table label (mixed runs x2apic-cluster)
	GuestMode string // rtt.elf's mode=
	Delivery  string // plain, pveoi or avic
	Receiver  string // "halted" or "spinning"
	HaltPoll  string // "on" or "off"

	Rounds    uint64 // round trips
	Cycles    uint64 // guest TSC cycles of all of them, send to acknowledgement seen
	MinCycles uint64 // the fastest one
	MaxCycles uint64 // the slowest one
	// Medians are each run's median round trip (rtt.elf's and the
	// floors' own, from every round trip's cycles), one per run merged:
	// one L1 timer tick in a round trip, a million cycles in the nested
	// hosts, moves a thousand round trips' mean by a few percent and not
	// their median.
	Medians []uint64

	// The receiver's own counts in the section (rtt.elf's, independent of
	// the VMM's): the HLTs it executed, its EOIs that exit (an x2APIC or
	// xAPIC EOI write) and those PV EOI completed without one.
	GuestHLTs, GuestEOIs, GuestPVEOIs uint64

	SenderExits uint64 // exits of the BSP in the section
	RecvExits   uint64 // exits of the receiver in the section
	// RecvByCause is the receiver's exits by cause name (RecvCauses
	// writes them per round trip).
	RecvByCause map[string]uint64
	Reps        int    // runs merged into the row (Add)
	Kicks       uint64 // kicks the receiver took (kick exits)
	Wakeups     uint64 // times the receiver left HLT
	Polls       uint64 // the receiver's halts that polled
	PollHits    uint64 // of which the poll saw the wake-up
	PollNanos   uint64 // host time the receiver's thread spent polling
}

// Add merges o, another run of the same case, into r: counts add up,
// the fastest and slowest round trips are those of both.
func (r *RTTRow) Add(o RTTRow) {
	if r.Reps == 0 {
		*r = o
		r.RecvByCause = maps.Clone(o.RecvByCause)
		r.Medians = slices.Clone(o.Medians)
		r.Reps = max(o.Reps, 1)
		return
	}
	r.Rounds += o.Rounds
	r.Cycles += o.Cycles
	r.MinCycles, r.MaxCycles = min(r.MinCycles, o.MinCycles), max(r.MaxCycles, o.MaxCycles)
	r.Medians = append(r.Medians, o.Medians...)
	r.GuestHLTs += o.GuestHLTs
	r.GuestEOIs += o.GuestEOIs
	r.GuestPVEOIs += o.GuestPVEOIs
	r.SenderExits += o.SenderExits
	r.RecvExits += o.RecvExits
	for c, n := range o.RecvByCause {
		r.RecvByCause[c] += n
	}
	r.Kicks += o.Kicks
	r.Wakeups += o.Wakeups
	r.Polls += o.Polls
	r.PollHits += o.PollHits
	r.PollNanos += o.PollNanos
	r.Reps += max(o.Reps, 1)
}

// RecvCauses is the receiver's exits per round trip by cause, largest
// first ("hlt 1, msr_x2apic_eoi_write 1").
func (r RTTRow) RecvCauses() string {
	names := slices.Collect(maps.Keys(r.RecvByCause))
	sort.Slice(names, func(i, j int) bool {
		a, b := r.RecvByCause[names[i]], r.RecvByCause[names[j]]
		return a > b || a == b && names[i] < names[j]
	})
	parts := make([]string, 0, len(names))
	for _, c := range names {
		if n := r.RecvByCause[c]; n != 0 {
			parts = append(parts, c+" "+strconv.FormatFloat(ratio(n, r.Rounds), 'f', -1, 64))
		}
	}
	return strings.Join(parts, ", ")
}

// CyclesPerRTT is the mean round trip in guest TSC cycles.
func (r RTTRow) CyclesPerRTT() float64 { return ratio(r.Cycles, r.Rounds) }

// MedianCycles is the runs' median round trip, their mean over the runs
// merged; 0 when no run reported one.
func (r RTTRow) MedianCycles() float64 {
	var sum uint64
	for _, m := range r.Medians {
		sum += m
	}
	return ratio(sum, uint64(len(r.Medians)))
}

// SenderPerRTT and RecvPerRTT are exits per round trip.
func (r RTTRow) SenderPerRTT() float64 { return ratio(r.SenderExits, r.Rounds) }
func (r RTTRow) RecvPerRTT() float64   { return ratio(r.RecvExits, r.Rounds) }

// PolledPerRTT is the receiver's host time polling per round trip, in
// microseconds.
func (r RTTRow) PolledPerRTT() float64 { return ratio(r.PollNanos, r.Rounds) / 1e3 }

// RTTTable is the result of one 'govmm bench-rtt' run.
type RTTTable struct {
	// Rows are govmm's cases, and the reference's: the same guest under
	// KVM's in-kernel LAPIC (QEMU), Delivery "kvm-lapic", no exit counts.
	Rows []RTTRow
	Note string // how it was made, written above the table
	// FloorPerExit is the cycles of one exit under the minimal C VMM
	// (govmm bench-exits' floor, its x2APIC MSR write), measured in the
	// same run; 0: not measured.
	FloorPerExit float64
}

// vsKVM is row r's mean round trip over the in-kernel LAPIC's for the same
// mode and receiver: govmm's own run on it (--lapic=kvm) where the table
// has one, else QEMU's (0: neither).
func (t *RTTTable) vsKVM(r RTTRow) float64 {
	if reference(r) {
		return 0
	}
	for _, del := range []string{GovmmKVMLAPIC, KVMLAPIC} {
		for _, o := range t.Rows {
			if o.Delivery == del && o.Mode == r.Mode && o.Receiver == r.Receiver && o.Rounds > 0 {
				return r.CyclesPerRTT() / o.CyclesPerRTT()
			}
		}
	}
	return 0
}

// KVMLAPIC is the delivery path of QEMU's reference rows: KVM's in-kernel
// local APIC, under QEMU (no exit counts: QEMU's are not govmm's).
const KVMLAPIC = "kvm-lapic"

// GovmmKVMLAPIC is the delivery path of govmm's own reference rows: the
// same VM on KVM's in-kernel LAPIC (--lapic=kvm), its exits counted by
// KVM's statistics (the guest's: KVM's exits less the host's interrupts').
const GovmmKVMLAPIC = "kvm-lapic (govmm)"

// FloorIPI is the delivery path of the IPI floor's rows: the minimal C
// VMM's user-space APIC (bench/floor) running rtt.elf's round-trip code.
const FloorIPI = "floor-ipi"

// reference reports whether r is a reference row, not one of govmm's.
func reference(r RTTRow) bool {
	return r.Delivery == KVMLAPIC || r.Delivery == GovmmKVMLAPIC || r.Delivery == FloorIPI
}

// xapicICR reports whether rtt.elf's mode m writes the ICR as xAPIC MMIO
// (else as an x2APIC MSR: the x2APIC modes and govmm's PV send-IPI).
func xapicICR(m string) bool { return strings.HasPrefix(m, "xapic") }

// vsFloorIPI is row r's mean round trip over the IPI floor's for the same
// receiver and the same kind of ICR access (x2APIC MSR or xAPIC MMIO), 0
// without one.
func (t *RTTTable) vsFloorIPI(r RTTRow) float64 {
	if o, ok := t.floorIPIFor(r); ok {
		return r.CyclesPerRTT() / o.CyclesPerRTT()
	}
	return 0
}

// vsFloorIPIMedian is vsFloorIPI of the median round trips, 0 without
// them.
func (t *RTTTable) vsFloorIPIMedian(r RTTRow) float64 {
	if o, ok := t.floorIPIFor(r); ok && o.MedianCycles() > 0 {
		return r.MedianCycles() / o.MedianCycles()
	}
	return 0
}

// floorIPIFor is the IPI floor's row for r's receiver and kind of ICR
// access (x2APIC MSR or xAPIC MMIO); none for a reference row.
func (t *RTTTable) floorIPIFor(r RTTRow) (RTTRow, bool) {
	if reference(r) {
		return RTTRow{}, false
	}
	for _, o := range t.Rows {
		if o.Delivery == FloorIPI && o.Receiver == r.Receiver && o.Rounds > 0 && xapicICR(o.GuestMode) == xapicICR(r.GuestMode) {
			return o, true
		}
	}
	return RTTRow{}, false
}

// AtFloor is what r's exits per round trip (sender's and receiver's)
// would cost at the floor, in cycles; 0 without a floor.
func (t *RTTTable) AtFloor(r RTTRow) float64 {
	return (r.SenderPerRTT() + r.RecvPerRTT()) * t.FloorPerExit
}

// vsPollOff is row r's mean round trip over that of the same case with
// halt polling off, measured in the same run (0: no such row).
func (t *RTTTable) vsPollOff(r RTTRow) float64 {
	for _, o := range t.Rows {
		if o.Mode == r.Mode && o.Delivery == r.Delivery && o.Receiver == r.Receiver && o.HaltPoll == "off" && o.Rounds > 0 {
			return r.CyclesPerRTT() / o.CyclesPerRTT()
		}
	}
	return 0
}

// writeHead writes a report's title and its note (if any), each followed
// by a blank line.
func writeHead(w io.Writer, title, note string) {
	fmt.Fprintf(w, "# %s\n\n", title)
	if note != "" {
		fmt.Fprintf(w, "%s\n\n", note)
	}
}

// WriteMarkdown writes the title, the note and one line per case.
func (t *RTTTable) WriteMarkdown(w io.Writer) {
	writeHead(w, "govmm bench-rtt: IPI round trips, bare metal (rtt.elf)", t.Note)
	t.WriteTable(w)
}

// WriteTable writes the Markdown table alone.
func (t *RTTTable) WriteTable(w io.Writer) {
	writeHeader(w, "llllrrrrrrlrrrrrrr", "mode", "delivery", "receiver", "halt poll", "round trips", "cycles/round trip",
		"median", "vs poll off", "sender exits/RT", "receiver exits/RT", "receiver exits by cause, per RT",
		"its exits at the floor, cycles", "RT / that", "vs the IPI floor", "medians vs the IPI floor's", "vs KVM's in-kernel LAPIC", "polls (hits)", "µs polled/RT")
	for _, r := range t.Rows {
		vs := ""
		if v := t.vsPollOff(r); v > 0 && r.HaltPoll != "off" {
			vs = strconv.FormatFloat(v, 'f', 2, 64)
		}
		floor, over := "", ""
		kvm, ipi, ipiMed := ratio2(t.vsKVM(r)), ratio2(t.vsFloorIPI(r)), ratio2(t.vsFloorIPIMedian(r))
		if f := t.AtFloor(r); f > 0 && r.Delivery != KVMLAPIC && r.Delivery != GovmmKVMLAPIC {
			floor, over = fmt.Sprintf("%.0f", f), fmt.Sprintf("%.2f", r.CyclesPerRTT()/f)
		}
		exits := [2]string{num(r.SenderPerRTT()), num(r.RecvPerRTT())}
		if r.Delivery == KVMLAPIC {
			exits = [2]string{"–", "–"} // QEMU's exits are not govmm's to count
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d (%d) | %.1f |\n",
			r.Mode, r.Delivery, r.Receiver, r.HaltPoll, r.Rounds, r.CyclesPerRTT(), r.MedianCycles(), vs, exits[0],
			exits[1], r.RecvCauses(), floor, over, ipi, ipiMed, kvm, r.Polls, r.PollHits, r.PolledPerRTT())
	}
}

// ratio2 is a ratio with two decimals, "" for none (0).
func ratio2(v float64) string {
	if v <= 0 {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// WriteCSV writes one line per case, raw counts and ratios.
func (t *RTTTable) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"mode", "guest_mode", "delivery", "receiver", "halt_poll", "rounds", "cycles", "cycles_min", "cycles_max",
		"cycles_per_rtt", "vs_poll_off", "sender_exits", "receiver_exits", "sender_exits_per_rtt", "receiver_exits_per_rtt",
		"receiver_exits_by_cause", "at_floor_cycles", "vs_floor_ipi", "vs_kvm_lapic", "kicks", "wakeups", "halt_polls", "halt_poll_hits", "halt_poll_ns",
		"guest_hlts", "guest_eois", "guest_pv_eois", "cycles_median", "vs_floor_ipi_median"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, r := range t.Rows {
		cw.Write([]string{r.Mode, r.GuestMode, r.Delivery, r.Receiver, r.HaltPoll, u(r.Rounds), u(r.Cycles), u(r.MinCycles),
			u(r.MaxCycles), f(r.CyclesPerRTT()), f(t.vsPollOff(r)), u(r.SenderExits), u(r.RecvExits), f(r.SenderPerRTT()),
			f(r.RecvPerRTT()), r.RecvCauses(), f(t.AtFloor(r)), f(t.vsFloorIPI(r)), f(t.vsKVM(r)), u(r.Kicks), u(r.Wakeups), u(r.Polls), u(r.PollHits), u(r.PollNanos),
			u(r.GuestHLTs), u(r.GuestEOIs), u(r.GuestPVEOIs), f(r.MedianCycles()), f(t.vsFloorIPIMedian(r))})
	}
	cw.Flush()
	return cw.Error()
}
