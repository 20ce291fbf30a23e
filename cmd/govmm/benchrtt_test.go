package main

import (
	"bytes"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/govmm/govmm/benchreport"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// TestBenchRTT runs 'govmm bench-rtt' in xAPIC and x2APIC physical mode,
// plain and AVIC, and checks the CSV's numbers exactly: 20 round trips in
// every case; the sender's exits per round trip (xAPIC 3, x2APIC 1: the
// send and nothing else); the receiver's HLT and EOI exits equal to the
// HLTs and exiting EOIs rtt.elf's receiver counted itself (independent of
// govmm's accounting), none with AVIC's PV EOI, whose EOIs the guest saw
// completed without an exit, one per round trip; a spinning receiver no
// HLT; every IPI either woke the receiver, kicked it or found it in
// govmm, and an interrupt window only where it had interrupts off; no
// other exit. Halt polling is counted only with it on. The
// IPI floor's rows (the C VMM, run beside govmm) are there for both modes,
// with the sender's exits the same as govmm's.
func TestBenchRTT(t *testing.T) {
	needKVM(t)
	guest := rttGuestPath()
	for _, p := range []string{guest, floorVMMPath(), floorBlobPath(), rttFloorBlobPath()} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIP: %s missing (run 'make guests floorvmm'): %v", p, err)
		}
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run([]string{"bench-rtt", "--modes", "xapic-phys,x2apic-phys", "--delivery", "plain,avic", "--lapic", "govmm", "--rounds", "20", "--reps", "1", "--qemu", "",
		"--guest", guest, "--out", out}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("bench-rtt exited %d:\n%s", status, stderr.String())
	}
	if !strings.Contains(stderr.String(), "[8/8] x2apic-phys avic halt-poll off") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	recs, col := readReportCSV(t, out)
	if len(recs) != 20 {
		t.Fatalf("%d CSV rows, want 20 (2 modes x (2 deliveries x halt poll on/off + the IPI floor) x halted/spinning)", len(recs))
	}
	floors := 0
	for _, r := range recs {
		get, n := csvCells(t, r, col)
		name := strings.Join([]string{get("mode"), get("delivery"), get("receiver"), "poll-" + get("halt_poll")}, "/")
		perICR := uint64(1)
		if get("mode") == "xapic-phys" {
			perICR = 3
		}
		rounds := n("rounds")
		if get("delivery") == benchreport.FloorIPI {
			floors++
			if rounds != 40 || n("cycles") == 0 || n("sender_exits") != rounds*perICR {
				t.Errorf("%s: %d round trips (want 40: one floor run beside each delivery), %d cycles, %d sender exits",
					name, rounds, n("cycles"), n("sender_exits"))
			}
			continue
		}
		if rounds != 20 || n("cycles") == 0 || n("cycles_min") > n("cycles_max") {
			t.Errorf("%s: %d round trips, %s cycles (min %s, max %s)", name, rounds, get("cycles"), get("cycles_min"), get("cycles_max"))
		}
		if got := n("sender_exits"); got != 20*perICR {
			t.Errorf("%s: sender took %d exits, want exactly %d", name, got, 20*perICR)
		}
		causes := recvCauses(t, get("receiver_exits_by_cause"), rounds)
		eoi := causes["msr_x2apic_eoi_write"] + causes["mmio_apic_eoi_write"]
		hlt, kick := causes["hlt"], causes["kick"]
		if hlt != n("guest_hlts") || eoi != n("guest_eois") {
			t.Errorf("%s: govmm counted %d HLT and %d EOI exits, the guest %d HLTs and %d exiting EOIs", name, hlt, eoi, n("guest_hlts"), n("guest_eois"))
		}
		wantPV := uint64(0)
		if get("delivery") == "avic" {
			wantPV = 20
		}
		if n("guest_pv_eois") != wantPV || n("guest_eois")+n("guest_pv_eois") != 20 {
			t.Errorf("%s: the guest's EOIs: %d exiting, %d by PV EOI; want %d by PV EOI of 20", name, n("guest_eois"), n("guest_pv_eois"), wantPV)
		}
		window := causes["irq_window"]
		// A kick that found nothing (kick_spurious): the kick protocol's
		// one spurious exit at most (vcpu/kick.go), which a raw KVM_RUN
		// (--kvm-run, auto here) can now cost a spinning receiver: Go's
		// SIGURG ends its KVM_RUN, the entry after it takes the IPI
		// (counted as its kick), and the sender's kick, flagged as the
		// receiver left the guest, ends the next KVM_RUN with nothing to
		// bring (nested AMD-V, 2026-12-07: 41 exits, 20 EOI, 20 kick,
		// 1 spurious). TestIPIExitCounts allows its spinners the same.
		// More than one in 20 round trips fails.
		spurious := causes["kick_spurious"]
		if sum := hlt + eoi + kick + window + spurious; sum != n("receiver_exits") || spurious > 1 {
			t.Errorf("%s: receiver exits %d, of which HLT %d, EOI %d, kick %d, window %d, spurious kicks %d: others %v", name, n("receiver_exits"), hlt, eoi, kick, window, spurious, causes)
		}
		// Each IPI reached the receiver through exactly one of: a wake-up
		// from HLT, a kick out of the guest, or none (it found the vCPU in
		// govmm), and was injected at once or, when the receiver had
		// interrupts off (the previous IPI's handler, after its EOI exit,
		// on a host that held it up for the whole gap), through an
		// interrupt window: so wake-ups and kicks are at most one per IPI,
		// and with the windows at least one per IPI.
		// One race costs one more: a kick sent as the receiver was on its
		// way into HLT, whose HLT exit then took the IPI (a wake-up), and
		// whose signal ended the next KVM_RUN, finding the PV EOI the
		// guest had done by then (a kick that brought work). Seen 1 in 5
		// runs of this test on a loaded host with AVIC; the kick protocol
		// allows it (vcpu/kick.go), the floor VMM's the same. More than one
		// such race in 20 round trips fails.
		ways := n("wakeups") + kick
		if ways > 20+1 || ways+window < 20 {
			t.Errorf("%s: %d wake-ups, %d kicks and %d windows for 20 IPIs", name, n("wakeups"), kick, window)
		} else if ways > 20 {
			t.Logf("%s: %d wake-ups and %d kicks for 20 IPIs: a kick raced the receiver's HLT exit", name, n("wakeups"), kick)
		}
		if get("receiver") == "spinning" && (hlt != 0 || n("wakeups") != 0) {
			t.Errorf("%s: a spinning receiver took %d HLT exits and %d wake-ups", name, hlt, n("wakeups"))
		}
		if get("receiver") == "halted" && n("wakeups") == 0 {
			t.Errorf("%s: a halted receiver never woke", name)
		}
		if f, err := strconv.ParseFloat(get("at_floor_cycles"), 64); err != nil || f <= 0 {
			t.Errorf("%s: its exits at the floor %q: the floor was not measured", name, get("at_floor_cycles"))
		}
		if f, err := strconv.ParseFloat(get("vs_floor_ipi"), 64); err != nil || f <= 0 {
			t.Errorf("%s: vs the IPI floor %q: the IPI floor was not measured", name, get("vs_floor_ipi"))
		}
		if get("halt_poll") == "off" && (n("halt_polls") != 0 || n("halt_poll_ns") != 0) {
			t.Errorf("%s: %d polls with halt polling off", name, n("halt_polls"))
		}
		if n("halt_poll_hits") > n("halt_polls") || n("halt_polls") > n("wakeups")+1 {
			t.Errorf("%s: %d polls, %d hits, %d wake-ups", name, n("halt_polls"), n("halt_poll_hits"), n("wakeups"))
		}
	}
	if floors != 4 {
		t.Errorf("%d IPI floor rows, want 4 (2 modes x halted/spinning)", floors)
	}
	if !strings.Contains(stdout.String(), "| x2apic-phys | avic | spinning | on | 20 |") {
		t.Errorf("table on stdout lacks the x2apic-phys avic spinning line:\n%s", stdout.String())
	}
}

// recvCauses reads a receiver_exits_by_cause cell ("hlt 1, kick 0.05", per
// round trip) back into exit counts for rounds round trips.
func recvCauses(t *testing.T, cell string, rounds uint64) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	if cell == "" {
		return m
	}
	for _, part := range strings.Split(cell, ", ") {
		name, per, ok := strings.Cut(part, " ")
		f, err := strconv.ParseFloat(per, 64)
		if !ok || err != nil {
			t.Fatalf("receiver_exits_by_cause %q: bad part %q", cell, part)
		}
		m[name] = uint64(math.Round(f * float64(rounds)))
	}
	return m
}

// TestRTTRowsFromConsole: the round-trip lines rtt.elf prints (under govmm
// or QEMU) become the halted and spinning rows; anything else is an error.
func TestRTTRowsFromConsole(t *testing.T) {
	log := "ok 2 cpus up\n# rtt receiver=halted mode=x2apic-phys rounds=200 gap=100000 cycles_total=0x017d78400 cycles_min=300000 cycles_max=900000 recv_hlts=200 recv_eois=199 recv_pv_eois=1 cycles_median=310000\n" +
		"# rtt receiver=spinning mode=x2apic-phys rounds=200 gap=100000 cycles_total=0x0bebc200 cycles_min=200000 cycles_max=700000 recv_hlts=0 recv_eois=200 recv_pv_eois=0 cycles_median=250000\nPASS rtt\n"
	rows, err := rttRows(log, func(int) (benchreport.RTTRow, error) { return benchreport.RTTRow{Delivery: benchreport.KVMLAPIC}, nil })
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %+v, %v", rows, err)
	}
	if rows[0].Receiver != "halted" || rows[0].Rounds != 200 || rows[0].Cycles != 400000000 || rows[0].MinCycles != 300000 ||
		rows[0].GuestHLTs != 200 || rows[0].GuestEOIs != 199 || rows[0].GuestPVEOIs != 1 || rows[1].GuestHLTs != 0 || rows[1].GuestEOIs != 200 ||
		rows[1].Receiver != "spinning" || rows[1].Cycles != 200000000 || rows[1].MaxCycles != 700000 || rows[1].Delivery != benchreport.KVMLAPIC ||
		rows[0].MedianCycles() != 310000 || rows[1].MedianCycles() != 250000 {
		t.Errorf("rows %+v", rows)
	}
	if _, err := rttRows("PASS rtt\n", func(int) (benchreport.RTTRow, error) { return benchreport.RTTRow{}, nil }); err == nil {
		t.Error("a console without round-trip lines gave rows")
	}
}

// TestBenchRTTOnKVMLAPIC runs 'govmm bench-rtt --lapic kvm': the same
// round trips on KVM's in-kernel LAPIC, two rows per mode, their exits
// KVM's statistics. Where KVM runs the guest's code (not an emulating
// host, whose KVM counts its instruction emulation's exits too) they are
// govmm's, but for a page's first touch or a PAUSE loop now and then: the sender's ICR write (1 in x2APIC, 3
// MMIO accesses in xAPIC) per round trip; a halted receiver's HLTs and
// EOIs, each one the guest counted itself; a spinning receiver's EOIs and
// interrupt windows only (its kick is a host interrupt, shown apart).
//
// KVM's LAPIC in the nested AMD-V host delivers some IPIs twice
// (docs/hosts.md), which rtt.elf counts: there the test skips, saying so,
// and the nested VT-x host runs it (make nested-vtx).
func TestBenchRTTOnKVMLAPIC(t *testing.T) {
	needKVM(t)
	if hostprobe.DetectEmulator() == hostprobe.QEMUTCG {
		t.Skip("SKIP: KVM's LAPIC in the nested AMD-V host (QEMU TCG) delivers some IPIs twice (docs/hosts.md), and rtt.elf counts them exactly: the nested VT-x host runs it")
	}
	guest := rttGuestPath()
	if _, err := os.Stat(guest); err != nil {
		t.Skipf("SKIP: %s missing (run 'make guests'): %v", guest, err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	status := run([]string{"bench-rtt", "--modes", "xapic-phys,x2apic-phys", "--lapic", "kvm", "--rounds", "20", "--reps", "1", "--qemu", "", "--floor", "",
		"--guest", guest, "--out", out}, &stdout, &stderr)
	if status != 0 {
		t.Fatalf("bench-rtt exited %d:\n%s", status, stderr.String())
	}
	recs, col := readReportCSV(t, out)
	if len(recs) != 4 {
		t.Fatalf("%d CSV rows, want 4 (2 modes x halted/spinning on KVM's LAPIC)", len(recs))
	}
	useKVM("/dev/kvm") // the host probe of /dev/kvm, whatever an earlier test pointed it at
	exact := !vmm.HostEmulates()
	// With VMX's PAUSE-loop exiting (kvm_intel's ple_gap, which the
	// nested VT-x host's Bochs implements) a spin-wait with PAUSE (the
	// sender's for its acknowledgement, a spinning receiver's) exits to
	// KVM now and then, and KVM's statistics count those exits as any
	// other: there KVM's counts are checked as at least the IPIs' own.
	// (Turning PLE off there left a spinning L2 vCPU holding Bochs's one
	// L1 CPU for minutes.)
	ple := sysParam("/sys/module/kvm_intel/parameters/ple_gap") > 0
	for _, r := range recs {
		get, n := csvCells(t, r, col)
		name := get("mode") + "/" + get("receiver")
		if get("delivery") != benchreport.GovmmKVMLAPIC || n("rounds") != 20 || n("cycles") == 0 {
			t.Errorf("%s: delivery %q, %d round trips, %d cycles", name, get("delivery"), n("rounds"), n("cycles"))
			continue
		}
		if !exact {
			continue
		}
		perICR := uint64(1)
		if get("mode") == "xapic-phys" {
			perICR = 3
		}
		// KVM's statistics count every exit KVM took: besides the IPI's,
		// a nested page's first touch or a PAUSE loop's, which they do not
		// tell apart (the CI of stop 47 saw one such in a section). At most
		// slack of those per section; govmm's own counts are exact.
		slack := uint64(2)
		if ple {
			slack = math.MaxUint32
		}
		if got := n("sender_exits"); got < 20*perICR || got > 20*perICR+slack {
			t.Errorf("%s: KVM counted %d sender exits, want %d (its ICR writes) and at most %d others", name, got, 20*perICR, slack)
		}
		causes := recvCauses(t, get("receiver_exits_by_cause"), n("rounds"))
		want := n("guest_hlts") + n("guest_eois") + causes["irq_window"]
		if got := n("receiver_exits"); got < want || got > want+slack || causes["hlt"] != n("guest_hlts") {
			t.Errorf("%s: KVM counted %d receiver exits (%d HLT), want the guest's %d HLTs, %d EOIs and %d windows and at most %d others: %v",
				name, got, causes["hlt"], n("guest_hlts"), n("guest_eois"), causes["irq_window"], slack, causes)
		}
	}
}

// sysParam is a module parameter's number, 0 if absent or not a number.
func sysParam(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return v
}
