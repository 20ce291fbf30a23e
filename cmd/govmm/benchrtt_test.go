package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/govmm/govmm/benchreport"
)

// TestBenchRTT runs 'govmm bench-rtt' in xAPIC and x2APIC physical mode,
// plain and AVIC, and checks the CSV: 20 round trips in every case; the
// sender's exits per round trip exact (xAPIC 3, x2APIC 1: the send and
// nothing else); a spinning receiver exactly one kick per round trip and
// one EOI exit (none with AVIC's PV EOI); a halted one its EOIs likewise,
// woken rather than kicked (but for a round the receiver had not reached
// HLT yet, which a loaded host makes possible). Halt polling is counted
// only with it on, and never changes an exit count of the sender.
func TestBenchRTT(t *testing.T) {
	needKVM(t)
	guest := rttGuestPath()
	for _, p := range []string{guest, floorVMMPath(), floorBlobPath()} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIP: %s missing (run 'make guests floorvmm'): %v", p, err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run([]string{"bench-rtt", "--modes", "xapic-phys,x2apic-phys", "--delivery", "plain,avic", "--rounds", "20", "--reps", "1", "--qemu", "",
		"--guest", guest, "--out", out}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("bench-rtt exited %d:\n%s", status, stderr.String())
	}
	if !strings.Contains(stderr.String(), "[8/8] x2apic-phys avic halt-poll off") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	recs, col := readReportCSV(t, out)
	if len(recs) != 16 {
		t.Fatalf("%d CSV rows, want 16 (2 modes x 2 deliveries x halt poll on/off x halted/spinning)", len(recs))
	}
	for _, r := range recs {
		get := func(k string) string { return r[col[k]] }
		n := func(k string) uint64 {
			v, err := strconv.ParseUint(get(k), 10, 64)
			if err != nil {
				t.Fatalf("CSV %s = %q: %v", k, get(k), err)
			}
			return v
		}
		name := strings.Join([]string{get("mode"), get("delivery"), get("receiver"), "poll-" + get("halt_poll")}, "/")
		if n("rounds") != 20 || n("cycles") == 0 || n("cycles_min") > n("cycles_max") {
			t.Errorf("%s: %s round trips, %s cycles (min %s, max %s)", name, get("rounds"), get("cycles"), get("cycles_min"), get("cycles_max"))
		}
		perICR := uint64(1)
		if get("mode") == "xapic-phys" {
			perICR = 3
		}
		if got := n("sender_exits"); got != 20*perICR {
			t.Errorf("%s: sender took %d exits, want exactly %d", name, got, 20*perICR)
		}
		causes := get("receiver_exits_by_cause")
		if get("delivery") == "avic" && strings.Contains(causes, "eoi_write") {
			t.Errorf("%s: EOI exits with AVIC's PV EOI: %s", name, causes)
		}
		if get("delivery") == "plain" && !strings.Contains(causes, "eoi_write 1") {
			t.Errorf("%s: want one EOI exit per round trip: %s", name, causes)
		}
		switch get("receiver") {
		case "spinning":
			if !strings.Contains(causes, "kick 1") {
				t.Errorf("%s: want one kick per round trip: %s", name, causes)
			}
			if n("wakeups") != 0 {
				t.Errorf("%s: a spinning receiver woke %d times", name, n("wakeups"))
			}
		case "halted":
			if n("wakeups") == 0 || n("wakeups") > 20 {
				t.Errorf("%s: %d wake-ups in 20 round trips", name, n("wakeups"))
			}
		}
		if f, err := strconv.ParseFloat(get("at_floor_cycles"), 64); err != nil || f <= 0 {
			t.Errorf("%s: its exits at the floor %q: the floor was not measured", name, get("at_floor_cycles"))
		}
		if get("halt_poll") == "off" && (n("halt_polls") != 0 || n("halt_poll_ns") != 0) {
			t.Errorf("%s: %d polls with halt polling off", name, n("halt_polls"))
		}
		if n("halt_poll_hits") > n("halt_polls") || n("halt_polls") > n("wakeups")+1 {
			t.Errorf("%s: %d polls, %d hits, %d wake-ups", name, n("halt_polls"), n("halt_poll_hits"), n("wakeups"))
		}
	}
	if !strings.Contains(stdout.String(), "| x2apic-phys | avic | spinning | on | 20 |") {
		t.Errorf("table on stdout lacks the x2apic-phys avic spinning line:\n%s", stdout.String())
	}
}

// TestRTTRowsFromConsole: the round-trip lines rtt.elf prints (under govmm
// or QEMU) become the halted and spinning rows; anything else is an error.
func TestRTTRowsFromConsole(t *testing.T) {
	log := "ok 2 cpus up\n# rtt receiver=halted mode=x2apic-phys rounds=200 gap=100000 cycles_total=0x017d78400 cycles_min=300000 cycles_max=900000\n" +
		"# rtt receiver=spinning mode=x2apic-phys rounds=200 gap=100000 cycles_total=0x0bebc200 cycles_min=200000 cycles_max=700000\nPASS rtt\n"
	rows, err := rttRows(log, func(int) (benchreport.RTTRow, error) { return benchreport.RTTRow{Delivery: benchreport.KVMLAPIC}, nil })
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if rows[0].Receiver != "halted" || rows[0].Rounds != 200 || rows[0].Cycles != 400000000 || rows[0].MinCycles != 300000 ||
		rows[1].Receiver != "spinning" || rows[1].Cycles != 200000000 || rows[1].MaxCycles != 700000 || rows[1].Delivery != benchreport.KVMLAPIC {
		t.Errorf("rows %+v", rows)
	}
	if _, err := rttRows("PASS rtt\n", func(int) (benchreport.RTTRow, error) { return benchreport.RTTRow{}, nil }); err == nil {
		t.Error("a console without round-trip lines gave rows")
	}
}
