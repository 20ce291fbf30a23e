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
			MinCycles: min, MaxCycles: max, SenderExits: 10, RecvExits: 20,
			RecvByCause: map[string]uint64{"hlt": 10, "msr_x2apic_eoi_write": 10}, Polls: 10, PollHits: 6, PollNanos: 30000}
	}
	var on, off RTTRow
	on.Add(run("on", 1000, 50, 200))
	on.Add(run("on", 2000, 40, 300))
	off.Add(run("off", 3000, 100, 400))
	off.Add(run("off", 3000, 90, 500))
	if on.Reps != 2 || on.Rounds != 20 || on.CyclesPerRTT() != 150 || on.MinCycles != 40 || on.MaxCycles != 300 ||
		on.RecvPerRTT() != 2 || on.PollHits != 12 || on.PolledPerRTT() != 3 {
		t.Errorf("merged row %+v", on)
	}
	if got := on.RecvCauses(); got != "hlt 1, msr_x2apic_eoi_write 1" {
		t.Errorf("causes %q", got)
	}
	tab := &RTTTable{Rows: []RTTRow{on, off}, FloorPerExit: 10}
	if v := tab.vsPollOff(on); v != 0.5 {
		t.Errorf("vs poll off %v, want 0.5", v)
	}
	if f := tab.AtFloor(on); f != 30 {
		t.Errorf("at the floor %v, want 3 exits x 10", f)
	}
	var b strings.Builder
	tab.WriteMarkdown(&b)
	if !strings.Contains(b.String(), "| x2apic-phys | plain | halted | on | 20 | 150 | 0.50 | 1 | 2 | hlt 1, msr_x2apic_eoi_write 1 | 30 | 5.00 |  | 20 (12) | 3.0 |") {
		t.Errorf("markdown:\n%s", b.String())
	}
}
