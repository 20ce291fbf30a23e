package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/benchreport"
	"github.com/govmm/govmm/exitcause"
)

// TestBenchIPI runs 'govmm bench-ipi' on 5 vCPUs (destinations 1, 2 and 4)
// in xAPIC physical and x2APIC cluster mode, plain and AVIC, and checks the
// CSV's numbers exactly: 8 unicast IPIs (2 rounds to 4 APs) and 2
// multicasts per case, each delivered to every destination, as many as the
// receiving CPUs say they took; the sender's exits (xAPIC 3 per ICR write,
// one ICR per destination; x2APIC cluster one WRMSR for APIC IDs 1..4,
// all in cluster 0); the receivers' HLT and EOI exits and wake-ups equal
// to the HLTs, exiting EOIs and wake-ups ipi.elf's receiving CPUs counted
// themselves (independent of govmm's accounting and its cost model), none
// of the EOIs exiting with AVIC (PV EOI completed each, the guest says);
// a kick for each interrupt a receiver took while not halted, so wake-ups
// and kicks add up to the deliveries; nothing else; and so exactly the
// architectural minimum per delivery: 1 HLT + 1 EOI (plain), 1 HLT (AVIC).
func TestBenchIPI(t *testing.T) {
	needKVM(t)
	guest := ipiGuestPath()
	if _, err := os.Stat(guest); err != nil {
		t.Fatalf("ipi.elf not built (run 'make guests'): %v", err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run([]string{"bench-ipi", "--lapic", "govmm", "--cpus", "5", "--dests", "4,1,2", "--modes", "xapic-phys,x2apic-cluster",
		"--delivery", "plain,avic", "--guest", guest, "--out", out}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("bench-ipi exited %d:\n%s", status, stderr.String())
	}
	if !strings.Contains(stdout.String(), "| xapic-phys | plain | 3 / 2 | 3 / 2 | 6 / 2 | 12 / 2 |") {
		t.Errorf("table on stdout lacks the xapic-phys plain line:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "[12/12] x2apic-cluster avic dests=4") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "govmm bench-ipi --cpus 5") {
		t.Errorf("report.md (%v) does not say how it was made:\n%s", err, md)
	}
	recs, col := readReportCSV(t, out)
	// Sender exits per IPI, by mode and case ("u" unicast, else dests).
	wantSender := map[string]map[string]uint64{
		"xapic-phys":     {"u": 3, "1": 3, "2": 6, "4": 12},
		"x2apic-cluster": {"u": 1, "1": 1, "2": 1, "4": 1},
	}
	seen := 0
	for _, r := range recs {
		get, n := csvCells(t, r, col)
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(get(k), 64)
			if err != nil {
				t.Fatalf("CSV %s = %q: %v", k, get(k), err)
			}
			return v
		}
		key, dests, ipis := get("dests"), n("dests"), uint64(2)
		if get("kind") == "unicast" {
			key, ipis = "u", 8
		}
		name := fmt.Sprintf("%s/%s/%s", get("mode"), get("delivery"), key)
		seen++
		if n("ipis") != ipis || n("deliveries") != ipis*dests || n("guest_irqs") != n("deliveries") {
			t.Errorf("%s: %d IPIs to %d CPUs each, govmm delivered %d, the receivers took %d; want %d IPIs",
				name, n("ipis"), dests, n("deliveries"), n("guest_irqs"), ipis)
		}
		deliv := n("guest_irqs")
		if got, want := n("sender_exits"), ipis*wantSender[get("mode")][key]; got != want {
			t.Errorf("%s: sender took %d exits, want exactly %d", name, got, want)
		}
		if got, want := num("sender_min"), float64(wantSender[get("mode")][key]); got != want {
			t.Errorf("%s: sender minimum %v, want %v", name, got, want)
		}
		recvMin, wantPV := uint64(2), uint64(0)
		if get("delivery") == "avic" {
			recvMin, wantPV = 1, deliv
		}
		if got := num("receiver_min"); got != float64(recvMin) {
			t.Errorf("%s: receiver minimum %v, want %d", name, got, recvMin)
		}
		hlt, eoi, kick, wake := n("receiver_hlt_exits"), n("receiver_eoi_exits"), n("receiver_kicks"), n("receiver_wakeups")
		if hlt != n("guest_hlts") || eoi != n("guest_eois") || wake != n("guest_wakes") || kick+n("guest_wakes") != deliv {
			t.Errorf("%s: govmm counted %d HLT exits, %d EOI exits, %d wake-ups, %d kicks; the receiving CPUs %d HLTs, %d exiting EOIs, %d wake-ups of %d interrupts",
				name, hlt, eoi, wake, kick, n("guest_hlts"), n("guest_eois"), n("guest_wakes"), deliv)
		}
		if wake+kick != deliv {
			t.Errorf("%s: %d wake-ups and %d kicks for %d deliveries", name, wake, kick, deliv)
		}
		if n("guest_pv_eois") != wantPV || n("guest_eois")+n("guest_pv_eois") != deliv {
			t.Errorf("%s: the receivers wrote %d EOIs and PV EOI completed %d, of %d interrupts; want %d by PV EOI",
				name, n("guest_eois"), n("guest_pv_eois"), deliv, wantPV)
		}
		if got := n("receiver_exits"); got != hlt+eoi+kick || got != recvMin*deliv {
			t.Errorf("%s: receivers took %d exits, of which HLT %d, EOI %d, kick %d; want those alone, %d per delivery (%s)",
				name, got, hlt, eoi, kick, recvMin, get("receiver_above_min_because"))
		}
	}
	if seen != 16 {
		t.Errorf("%d CSV rows, want 16 (2 modes x 2 deliveries x (unicast + 3 dest counts))", seen)
	}
}

// TestBenchIPIAligned runs 'govmm bench-ipi --aligned' in xAPIC cluster
// mode on 9 vCPUs: a multicast to 4 CPUs goes to APIC IDs 4..7, all of
// cluster 1, in one ICR write (3 sender exits: the cluster-aligned
// minimum; from ID 1 the same 4 CPUs span clusters 0 and 1, 2 writes); 5
// CPUs (IDs 4..8) take 2, also the minimum; 6 (IDs 4..9) do not fit.
func TestBenchIPIAligned(t *testing.T) {
	needKVM(t)
	guest := ipiGuestPath()
	if _, err := os.Stat(guest); err != nil {
		t.Fatalf("ipi.elf not built (run 'make guests'): %v", err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run([]string{"bench-ipi", "--lapic", "govmm", "--aligned", "--cpus", "9", "--dests", "4,5,6", "--modes", "xapic-cluster",
		"--delivery", "plain", "--guest", guest, "--out", out}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("bench-ipi exited %d:\n%s", status, stderr.String())
	}
	recs, col := readReportCSV(t, out)
	want := map[string]struct{ first, sends, sender, skipped string }{
		"unicast/1":   {"1", "1.000", "3.000", ""},
		"multicast/4": {"4", "1.000", "3.000", ""},
		"multicast/5": {"4", "2.000", "6.000", ""},
		"multicast/6": {"4", "", "", "APIC IDs 4..9"},
	}
	for _, r := range recs {
		get := func(k string) string { return r[col[k]] }
		key := get("kind") + "/" + get("dests")
		w, ok := want[key]
		if !ok {
			t.Errorf("unexpected row %s: %v", key, r)
			continue
		}
		delete(want, key)
		if get("first_apic_id") != w.first || !strings.Contains(get("skipped"), w.skipped) || (w.skipped == "") != (get("skipped") == "") {
			t.Errorf("%s: first APIC ID %q, skipped %q; want %q and %q", key, get("first_apic_id"), get("skipped"), w.first, w.skipped)
		}
		if w.skipped != "" {
			continue
		}
		if get("sender_exits_per_ipi") != w.sender || get("sender_min") != w.sender || get("sender_above_min_because") != "" {
			t.Errorf("%s: sender %s exits per IPI (minimum %s, because %q), want exactly %s at the minimum",
				key, get("sender_exits_per_ipi"), get("sender_min"), get("sender_above_min_because"), w.sender)
		}
		ipis, _ := strconv.ParseFloat(get("ipis"), 64)
		sends, _ := strconv.ParseFloat(get("sends"), 64)
		if got := strconv.FormatFloat(sends/ipis, 'f', 3, 64); key != "unicast/1" && got != w.sends {
			t.Errorf("%s: %s ICR writes per IPI, want %s", key, got, w.sends)
		}
	}
	for k := range want {
		t.Errorf("no row %s in the CSV", k)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "--rounds 2 --aligned`") {
		t.Errorf("report.md does not say --aligned:\n%s", md)
	}
}

// TestIPIMinimum checks that the table's minimum figures are the cost
// model's (package ipicost) for a multicast to APIC IDs 1..N.
func TestIPIMinimum(t *testing.T) {
	for _, c := range []struct {
		guest  string
		dests  int
		sender float64
	}{
		{"xapic-phys", 4, 12},
		{"xapic-cluster", 32, 24}, // 8 clusters of 4, 3 exits each
		{"x2apic-cluster", 64, 4},
		{"pv", 1023, 1},
	} {
		r := benchreport.IPIRow{GuestMode: c.guest, Kind: "multicast", Dests: c.dests, Delivery: "avic"}
		ipiMinimum(&r)
		if r.SenderMin != c.sender || r.RecvMin != 1 {
			t.Errorf("%s to %d: minimum sender %v receiver %v, want %v and 1", c.guest, c.dests, r.SenderMin, r.RecvMin, c.sender)
		}
	}
	r := benchreport.IPIRow{GuestMode: "xapic-cluster", Kind: "unicast", Dests: 1, Delivery: "plain"}
	ipiMinimum(&r)
	if r.SenderMin != 3 || r.RecvMin != 2 {
		t.Errorf("xapic-cluster unicast, plain: minimum sender %v receiver %v, want 3 and 2", r.SenderMin, r.RecvMin)
	}
}

// TestWhyClasses: the LAPIC timer's initial-count writes (timer_icr) on the
// sender are exits besides the send path, not ICR writes; a PV EOI MSR
// write on a receiver is not an EOI exit.
func TestWhyClasses(t *testing.T) {
	r := benchreport.IPIRow{GuestMode: "x2apic-cluster", Kind: "unicast", Dests: 1, Delivery: "pveoi",
		IPIs: 10, Deliveries: 10, SenderExit: 20, RecvExit: 21}
	ipiMinimum(&r)
	var bsp, recv accounting.Snapshot
	bsp.Exits[exitcause.APIC(true, true, 0x30)] = 10 // ICR
	bsp.Exits[exitcause.APIC(true, true, 0x38)] = 10 // timer_icr
	if got, want := senderWhy(r, bsp), "exits besides the send path, per IPI: msr_x2apic_timer_icr_write 1"; got != want {
		t.Errorf("senderWhy = %q, want %q", got, want)
	}
	recv.Exits[exitcause.HLT] = 10
	recv.Exits[exitcause.MSRPVEOIWrite] = 1
	if got := recvWhy(r, recv); strings.Contains(got, "EOI exits despite PV EOI") {
		t.Errorf("recvWhy counts the PV EOI MSR as an EOI exit: %q", got)
	}
	recv.Exits[exitcause.APIC(true, true, 0x0B)] = 1
	if got := recvWhy(r, recv); !strings.Contains(got, "EOI exits despite PV EOI") {
		t.Errorf("recvWhy misses an x2APIC EOI write: %q", got)
	}
}

// TestIPILateOrLost: ipi.elf's verdicts on an IPI past its first limit are
// told apart: a late one is a note in the report, a lost one names itself
// in the error.
func TestIPILateOrLost(t *testing.T) {
	log := "# late unicast: vector 40 delivered 2042 of 2048 in 74 s, all 2048 within 814 s\nPASS ipi\n"
	m := reIPILate.FindAllStringSubmatch(log, -1)
	if len(m) != 1 || m[0][1] != "unicast: vector 40 delivered 2042 of 2048 in 74 s, all 2048 within 814 s" {
		t.Errorf("late lines %q", m)
	}
	if n := lateNote([]string{"x2apic-phys plain dests=1: " + m[0][1]}); !strings.Contains(n, "Late IPIs") || !strings.Contains(n, "2042 of 2048") {
		t.Errorf("late note %q", n)
	}
	if lateNote(nil) != "" {
		t.Error("a note without late IPIs")
	}
	lost := "FAIL unicast: lost: vector 40 delivered 2047 times, want 2048, after 814 s\n"
	if got := reIPILost.FindString(lost); got != "lost: vector 40 delivered 2047 times, want 2048, after 814 s" {
		t.Errorf("lost %q", got)
	}
	if reIPILost.FindString(log) != "" {
		t.Error("a late IPI read as lost")
	}
}
