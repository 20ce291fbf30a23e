package benchreport

import (
	"strings"
	"testing"
)

// TestRTTRowsMerge: runs of one case add up, the table compares polling
// on with off and the round trip with its exits at the floor.
func TestRTTRowsMerge(t *testing.T) {
	run := func(poll string, cycles, min, max uint64) RTTRow {
		return RTTRow{Mode: "x2apic-phys", Delivery: "plain", Receiver: "halted", HaltPoll: poll, Rounds: 10, Cycles: cycles,
			MinCycles: min, MaxCycles: max, Medians: []uint64{min + 10}, SenderExits: 10, RecvExits: 20,
			RecvByCause: map[string]uint64{"hlt": 10, "msr_x2apic_eoi_write": 10}, Polls: 10, PollHits: 6, PollNanos: 30000}
	}
	var on, off RTTRow
	on.Add(run("on", 1000, 50, 200))
	on.Add(run("on", 2000, 40, 300))
	off.Add(run("off", 3000, 100, 400))
	off.Add(run("off", 3000, 90, 500))
	if on.Reps != 2 || on.Rounds != 20 || on.CyclesPerRTT() != 150 || on.MinCycles != 40 || on.MaxCycles != 300 ||
		on.RecvPerRTT() != 2 || on.PollHits != 12 || on.PolledPerRTT() != 3 || on.MedianCycles() != 55 {
		t.Errorf("merged row %+v", on)
	}
	if got := on.RecvCauses(); got != "hlt 1, msr_x2apic_eoi_write 1" {
		t.Errorf("causes %q", got)
	}
	// The IPI floor's row for x2APIC ICR writes: on's ratio to it, and
	// none for an xAPIC row (another ICR access) or for the floor's own.
	floor := RTTRow{Mode: "x2apic-phys", GuestMode: "x2apic-phys", Delivery: FloorIPI, Receiver: "halted", HaltPoll: "off",
		Rounds: 20, Cycles: 1500, SenderExits: 20, RecvExits: 40, Medians: []uint64{20, 30}}
	xapic := on
	xapic.Mode, xapic.GuestMode = "xapic-phys", "xapic-phys"
	tab := &RTTTable{Rows: []RTTRow{on, off, floor, xapic}, FloorPerExit: 10}
	if v := tab.vsFloorIPI(on); v != 2 {
		t.Errorf("vs the IPI floor %v, want 150/75 = 2", v)
	}
	if v := tab.vsFloorIPIMedian(on); v != 2.2 {
		t.Errorf("medians vs the IPI floor's %v, want (60+50)/2 over (20+30)/2 = 2.2", v)
	}
	if v, w := tab.vsFloorIPI(xapic), tab.vsFloorIPI(floor); v != 0 || w != 0 {
		t.Errorf("vs the IPI floor: xAPIC row %v, the floor's own %v, want none", v, w)
	}
	if v := tab.vsPollOff(on); v != 0.5 {
		t.Errorf("vs poll off %v, want 0.5", v)
	}
	if f := tab.AtFloor(on); f != 30 {
		t.Errorf("at the floor %v, want 3 exits x 10", f)
	}
	var b strings.Builder
	tab.WriteMarkdown(&b)
	if !strings.Contains(b.String(), "| x2apic-phys | plain | halted | on | 20 | 150 | 55 | 0.50 | 1 | 2 | hlt 1, msr_x2apic_eoi_write 1 | 30 | 5.00 | 2.00 | 2.20 |  | 20 (12) | 3.0 |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
