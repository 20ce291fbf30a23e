package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/benchreport"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/ipicost"
	"github.com/govmm/govmm/vmm"
)

var rttBenchNote = `Each case is --reps runs of rtt.elf on 2 vCPUs, merged: the BSP sends an
IPI to APIC ID 1, whose handler EOIs and acknowledges in memory; the BSP
spins until it sees it. Cycles are the guest's TSC from before the send to
the acknowledgement seen, the mean over all round trips of the case; "vs
poll off" is that mean over the same case's with halt polling off, the runs
with it on and off alternating in one run of the benchmark (times on this
machine compare only side by side). "Its exits at the floor" is what the
round trip's exits (sender's and receiver's) would cost under the minimal C
VMM, measured in the same run; the rest of a round trip is the guest's own
instructions (interrupt delivery, handler, the sender's loop) and govmm's
wake-up and hand-off. A **halted** receiver waits in
HLT between IPIs (the wake-up path: its HLT exit, then its thread asleep or
polling); a **spinning** one runs guest code with IF=1 (the kick path).
Between round trips the BSP waits gap cycles, so the receiver is back in
HLT; its halts last about that long, which is what the poll window adapts
to (package haltpoll, KVM's rule). Exits are govmm's counts in the section,
exact; "polls (hits)" are the receiver's halts that polled and those whose
poll saw the wake-up, "µs polled" the host time its thread spent polling.
Rows "kvm-lapic (govmm)" are the same VM and guest on KVM's in-kernel
LAPIC (--lapic=kvm) in the same run: KVM delivers, halts (with its own
halt polling) and wakes; their exits are KVM's statistics over the same
sections, the guest's (KVM's exits less those for the host's own
interrupts, where a spinning receiver's kick lands: shown apart as
host_irq_not_counted). "vs KVM's in-kernel LAPIC" compares with those rows, or with
QEMU's ("kvm-lapic") where govmm's did not run.`

// rttBench is one 'govmm bench-rtt' configuration.
type rttBench struct {
	modes, deliveries []string
	rounds, gap, reps int
	poll              time.Duration
	guest             []byte
	floor             *floorBench // measures the exit floor; nil: not measured
	ipiBlob           string      // rttloop.bin, the IPI floor's guest; "": no IPI floor
	affinity          []int       // --cpu-affinity: host CPUs of the vCPU threads, govmm's and the floor's
	affinityFlag      string
	kvmRun            vmm.KVMRun // --kvm-run, govmm's rows'
	qemu              string     // QEMU, for the in-kernel LAPIC reference; "": none
	// govmmLAPIC, kvmLAPIC: --lapic's list: govmm's own rows, and the same
	// VM's on KVM's in-kernel LAPIC (--lapic=kvm) beside them.
	govmmLAPIC, kvmLAPIC bool
	guestPath            string
	timeout              time.Duration
	progress             io.Writer
}

func rttGuestPath() string     { return filepath.Join(filepath.Dir(ipiGuestPath()), "rtt.elf") }
func rttFloorBlobPath() string { return filepath.Join(filepath.Dir(ipiGuestPath()), "rttloop.bin") }

// cmdBenchRTT is 'govmm bench-rtt': IPI round trips in each mode and
// delivery path, halted and spinning receiver, halt polling on and off.
func cmdBenchRTT(args []string, stdout, stderr io.Writer) (int, error) {
	b, out, err := parseBenchRTTFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	tab := &benchreport.RTTTable{}
	if b.floor != nil {
		if tab.FloorPerExit, err = b.floor.perExit("msr", 3); err != nil {
			return 0, err
		}
		fmt.Fprintf(b.progress, "floor: %.0f cycles per x2APIC MSR write exit (minimal C VMM)\n", tab.FloorPerExit)
	}
	prog := &rttProgress{total: len(b.modes) * len(b.deliveries) * 2 * b.reps}
	var refFailures []string
	for _, m := range b.modes {
		rows, err := b.mode(m, prog)
		if err != nil {
			return 0, err
		}
		tab.Rows = append(tab.Rows, rows...)
		if b.qemu != "" && m != "pv" { // QEMU has no govmm PV send-IPI
			if ref, err := b.reference(m); err != nil {
				// govmm's rows stand without it; the table says why the
				// reference is missing, and so does the progress.
				fmt.Fprintf(b.progress, "%s under KVM's in-kernel LAPIC (QEMU): no reference: %v\n", m, err)
				refFailures = append(refFailures, fmt.Sprintf("%s: %s", m, firstLine(err.Error())))
			} else {
				tab.Rows = append(tab.Rows, ref[0], ref[1])
			}
		}
	}
	tab.Note = fmt.Sprintf("Produced by `govmm bench-rtt --modes %s --delivery %s --rounds %d --reps %d --gap %d --halt-poll %v --cpu-affinity=%s` (%s, %v).\n\n%s",
		strings.Join(b.modes, ","), strings.Join(b.deliveries, ","), b.rounds, b.reps, b.gap, b.poll, b.affinityFlag,
		time.Now().UTC().Format("2006-01-02"), time.Since(start).Round(time.Second), rttBenchNote)
	if len(refFailures) > 0 {
		tab.Note += "\n\nKVM's in-kernel LAPIC reference did not pass on this host, so it has no rows for: " +
			strings.Join(refFailures, "; ") + "."
	}
	return 0, writeBenchTable(out, tab, stdout)
}

// rttProgress numbers govmm's runs on the progress lines ([i/total]).
type rttProgress struct{ i, total int }

// mode runs every delivery path of mode, reps times with halt polling on
// and off alternating (side by side), each followed by a run of the IPI
// floor, and returns the merged rows: each delivery's four, then the
// floor's two.
func (b *rttBench) mode(m string, prog *rttProgress) ([]benchreport.RTTRow, error) {
	var rows []benchreport.RTTRow
	var floorIPI [2]benchreport.RTTRow // the floor VMM's, run after each of govmm's reps
	var onKVM [2]benchreport.RTTRow    // govmm on KVM's LAPIC (--lapic=kvm), run after each of govmm's reps
	for _, del := range b.deliveries {
		if !b.govmmLAPIC {
			break
		}
		var merged [2][2]benchreport.RTTRow // [poll on, off][halted, spinning]
		for range b.reps {
			for p, poll := range []bool{true, false} {
				prog.i++
				run, err := b.one(m, del, poll)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, halt poll %s: %w", m, del, onOff(poll), err)
				}
				merged[p][0].Add(run[0])
				merged[p][1].Add(run[1])
				fmt.Fprintf(b.progress, "[%d/%d] %s %s halt-poll %s: halted %.0f cycles/RT, spinning %.0f\n",
					prog.i, prog.total, m, del, onOff(poll), run[0].CyclesPerRTT(), run[1].CyclesPerRTT())
			}
			if err := b.floorIPI(m, &floorIPI); err != nil {
				return nil, err
			}
		}
		rows = append(rows, merged[0][0], merged[0][1], merged[1][0], merged[1][1])
	}
	if b.kvmLAPIC && m != "pv" { // govmm's PV send-IPI is its LAPIC's
		for range b.reps {
			run, err := b.oneOnKVM(m)
			if err != nil {
				return nil, fmt.Errorf("%s on KVM's LAPIC (--lapic=kvm): %w", m, err)
			}
			onKVM[0].Add(run[0])
			onKVM[1].Add(run[1])
			fmt.Fprintf(b.progress, "%s on KVM's in-kernel LAPIC (govmm --lapic=kvm): halted %.0f cycles/RT, spinning %.0f\n",
				m, run[0].CyclesPerRTT(), run[1].CyclesPerRTT())
		}
		rows = append(rows, onKVM[0], onKVM[1])
	}
	if floorIPI[0].Reps > 0 {
		rows = append(rows, floorIPI[0], floorIPI[1])
	}
	return rows, nil
}

func onOff(b bool) string { return pick(b, "on", "off") }

func parseBenchRTTFlags(args []string, stderr io.Writer) (*rttBench, string, error) {
	fs := benchFlagSet("bench-rtt", stderr)
	modeList := fs.String("modes", "xapic-phys,x2apic-phys,x2apic-cluster,pv",
		"comma-separated modes: xapic-phys, xapic-flat, xapic-cluster, x2apic-phys, x2apic-cluster, mixed, pv; "+
			"--x2apic's and bench's names are taken too: physical (x2apic-phys), cluster (x2apic-cluster), pv-ipi (pv)")
	delList := fs.String("delivery", "plain,avic", "comma-separated delivery paths: plain, pveoi (or pv-eoi), avic")
	lapics := fs.String("lapic", "govmm,kvm", "comma-separated LAPICs to run the round trips on: govmm (its own, every delivery path) and kvm "+
		"(the same VM on KVM's in-kernel LAPIC, --lapic=kvm: one row pair per mode, its exits KVM's own count; not for pv)")
	rounds := fs.Int("rounds", 500, "round trips per section (rtt.elf rounds=)")
	reps := fs.Int("reps", 3, "runs of each case, halt polling on and off alternating; a case's runs merge into its row")
	gap := fs.Int("gap", 100000, "guest TSC cycles between round trips (rtt.elf gap=)")
	poll := fs.Duration("halt-poll", vmm.DefaultHaltPoll, "the halt-polling bound of the runs with polling on")
	guest := fs.String("guest", rttGuestPath(), "the rtt.elf guest")
	qemu := fs.String("qemu", "qemu-system-x86_64", "QEMU, to run the same guest under KVM's in-kernel LAPIC for reference (only if found; \"\" for none)")
	floorVMM := fs.String("floor", floorVMMPath(), "the minimal C VMM whose exit cost is the floor column ('make floorvmm'); \"\" for none")
	blob := fs.String("blob", floorBlobPath(), "the floor loop for the C VMM ('make guests')")
	ipiBlob := fs.String("ipi-blob", rttFloorBlobPath(), "the round trip for the C VMM's IPI floor ('make guests'); \"\" for no IPI floor")
	out := fs.String("out", "govmm-bench-rtt", "directory for report.md and report.csv")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit per run")
	affinity := fs.String("cpu-affinity", "", "pin vCPU i's thread to host CPU LIST[i mod its length], under govmm and the IPI floor alike (e.g. 0,1); empty: the kernel places them")
	kvmRunFlag := addKVMRunFlag(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return nil, "", err
	}
	kvmRun, err := kvmRunFlag()
	if err != nil {
		return nil, "", err
	}
	cpus, err := parseCPUList("--cpu-affinity", *affinity)
	if err != nil {
		return nil, "", err
	}
	b := &rttBench{affinity: cpus, affinityFlag: *affinity, rounds: *rounds, gap: *gap, reps: *reps, poll: *poll, timeout: *timeout, progress: stderr, kvmRun: kvmRun}
	if b.rounds < 1 || b.reps < 1 || b.gap < 0 || b.poll <= 0 {
		return nil, "", fmt.Errorf("--rounds and --reps must be at least 1, --gap at least 0 and --halt-poll above 0")
	}
	if err := b.parseLists(*modeList, *delList, *lapics); err != nil {
		return nil, "", err
	}
	if b.guest, err = os.ReadFile(*guest); err != nil {
		return nil, "", fmt.Errorf("cannot read the round-trip guest (run 'make guests'): %w", err)
	}
	b.guestPath = *guest
	if err := b.findReferences(*qemu, *floorVMM, *blob, *ipiBlob, stderr); err != nil {
		return nil, "", err
	}
	return b, *out, nil
}

// findReferences finds what govmm's rows are measured beside: QEMU for
// KVM's in-kernel LAPIC (none if not found, said on stderr), the C floor
// VMM and its loops (an error if named and missing).
func (b *rttBench) findReferences(qemu, floorVMM, blob, ipiBlob string, stderr io.Writer) (err error) {
	if qemu != "" {
		if p, err := exec.LookPath(qemu); err == nil {
			b.qemu = p
		} else {
			fmt.Fprintf(stderr, "bench-rtt: no %s (%v): no in-kernel LAPIC reference ('make bench-rtt' installs qemu-system-x86)\n", qemu, err)
		}
	}
	if floorVMM == "" {
		return nil
	}
	if b.floor, err = newFloorBench(floorVMM, blob, "/dev/kvm", 5000); err != nil {
		return err
	}
	b.floor.kvmRun = b.kvmRun
	if ipiBlob != "" {
		if _, err := os.Stat(ipiBlob); err != nil {
			return fmt.Errorf("cannot find rttloop.bin, the IPI floor's guest (run 'make guests'): %w", err)
		}
		b.ipiBlob = ipiBlob
	}
	return nil
}

// parseLists reads bench-rtt's --modes, --delivery and --lapic.
func (b *rttBench) parseLists(modes, deliveries, lapics string) (err error) {
	if b.modes, err = parseIPIModes(modes); err != nil {
		return err
	}
	if b.deliveries, err = parseDeliveries(deliveries); err != nil {
		return err
	}
	b.govmmLAPIC, b.kvmLAPIC, err = parseLAPICs(lapics)
	return err
}

var reRTT = regexp.MustCompile(`# rtt receiver=(\w+) mode=\S+ rounds=(\d+) gap=\d+ cycles_total=0x([0-9a-f]+) cycles_min=(\d+) cycles_max=(\d+)` +
	` recv_hlts=(\d+) recv_eois=(\d+) recv_pv_eois=(\d+) cycles_median=(\d+)`)

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// reference runs rtt.elf in mode under QEMU reps times (underQEMU) and
// merges the runs into a halted and a spinning row, announced on progress.
func (b *rttBench) reference(mode string) ([2]benchreport.RTTRow, error) {
	var ref [2]benchreport.RTTRow
	for range b.reps {
		rows, err := b.underQEMU(mode)
		if err != nil {
			return ref, err
		}
		ref[0].Add(rows[0])
		ref[1].Add(rows[1])
	}
	fmt.Fprintf(b.progress, "%s under KVM's in-kernel LAPIC (QEMU): halted %.0f cycles/RT, spinning %.0f\n",
		mode, ref[0].CyclesPerRTT(), ref[1].CyclesPerRTT())
	return ref, nil
}

// underQEMU runs rtt.elf in mode under QEMU with KVM's in-kernel irqchip
// (its default), 2 vCPUs, and returns its halted and spinning rows: the
// round trip where KVM itself delivers the IPI, halts and wakes the vCPUs
// (with KVM's own halt polling). rtt.elf reads QEMU's fw_cfg and exits
// through isa-debug-exit, as under govmm.
func (b *rttBench) underQEMU(mode string) ([]benchreport.RTTRow, error) {
	guest := ipiBenchModes[mode]
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.qemu, "-accel", "kvm", "-cpu", "host", "-smp", "2", "-m", "128",
		"-nographic", "-nodefaults", "-serial", "stdio", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
		"-kernel", b.guestPath, "-append", fmt.Sprintf("mode=%s rounds=%d gap=%d", guest, b.rounds, b.gap))
	out, _ := cmd.CombinedOutput() // isa-debug-exit makes the exit status odd: the console says
	log := string(out)
	if !strings.Contains(log, "PASS rtt") {
		why := "did not pass"
		if ctx.Err() != nil {
			why = fmt.Sprintf("did not end within %v", b.timeout)
		}
		return nil, fmt.Errorf("rtt.elf %s under QEMU; its console:\n%s", why, log)
	}
	return rttRows(log, func(int) (benchreport.RTTRow, error) {
		return benchreport.RTTRow{Mode: mode, GuestMode: guest, Delivery: benchreport.KVMLAPIC, HaltPoll: "kvm"}, nil
	})
}

// rttRows reads rtt.elf's round-trip lines from its console into rows,
// halted then spinning; row gives each its case and counts (section 1, 2).
func rttRows(log string, row func(section int) (benchreport.RTTRow, error)) ([]benchreport.RTTRow, error) {
	var rows []benchreport.RTTRow
	for i, m := range reRTT.FindAllStringSubmatch(log, -1) {
		r, err := row(i + 1)
		if err != nil {
			return nil, err
		}
		r.Receiver = m[1]
		r.Rounds, _ = strconv.ParseUint(m[2], 10, 64)
		r.Cycles, _ = strconv.ParseUint(m[3], 16, 64)
		r.MinCycles, _ = strconv.ParseUint(m[4], 10, 64)
		r.MaxCycles, _ = strconv.ParseUint(m[5], 10, 64)
		r.GuestHLTs, _ = strconv.ParseUint(m[6], 10, 64)
		r.GuestEOIs, _ = strconv.ParseUint(m[7], 10, 64)
		r.GuestPVEOIs, _ = strconv.ParseUint(m[8], 10, 64)
		med, _ := strconv.ParseUint(m[9], 10, 64)
		r.Medians = []uint64{med}
		rows = append(rows, r)
	}
	if len(rows) != 2 || rows[0].Receiver != "halted" || rows[1].Receiver != "spinning" {
		return nil, fmt.Errorf("rtt.elf printed %d round-trip lines, want halted then spinning; its console:\n%s", len(rows), log)
	}
	return rows, nil
}

// one runs rtt.elf once and returns its halted and spinning rows.
func (b *rttBench) one(mode, delivery string, poll bool) ([]benchreport.RTTRow, error) {
	guest := ipiBenchModes[mode]
	cmdline := fmt.Sprintf("mode=%s rounds=%d gap=%d", guest, b.rounds, b.gap)
	if delivery != "plain" {
		cmdline += " pveoi=1"
	}
	con := &vmm.ConsoleLog{}
	cfg := vmm.Config{CPUs: 2, Kernel: b.guest, Cmdline: cmdline, Console: con, IOMMU: true, PVIPI: true,
		PVEOI: delivery == "pveoi", AVIC: delivery == "avic", CPUAffinity: b.affinity, KVMRun: b.kvmRun}
	if poll {
		cfg.HaltPoll = b.poll
	}
	log, secs, err := b.runRTT(cfg, con, guest)
	if err != nil {
		return nil, err
	}
	return rttRows(log, func(section int) (benchreport.RTTRow, error) {
		sec, ok := secs[section]
		if !ok || len(sec.CPUs) != 2 {
			return benchreport.RTTRow{}, fmt.Errorf("govmm recorded no section %d", section)
		}
		r := benchreport.RTTRow{Mode: mode, GuestMode: guest, Delivery: delivery, HaltPoll: onOff(poll)}
		bsp, recv := sec.CPUs[0], sec.CPUs[1]
		r.SenderExits, r.RecvExits = bsp.Total(), recv.Total()
		r.RecvByCause = map[string]uint64{}
		for c, n := range recv.Exits {
			if n != 0 {
				r.RecvByCause[exitcause.Cause(c).String()] = n
			}
		}
		r.Kicks = recv.Exits[exitcause.Kick] + recv.Exits[exitcause.KickSpurious]
		r.Wakeups, r.Polls, r.PollHits, r.PollNanos = recv.Wakeups, recv.HaltPolls, recv.HaltPollHits, recv.HaltPollNanos
		return r, nil
	})
}

// runRTT runs rtt.elf in guest mode guest in the VM cfg describes (its
// console con; x2APIC hidden for an xAPIC mode) and returns its console and
// govmm's sections by ID, or why it did not pass.
func (b *rttBench) runRTT(cfg vmm.Config, con *vmm.ConsoleLog, guest string) (string, map[int]accounting.Section, error) {
	if !ipicost.X2APIC(guest) {
		cfg.X2APIC = vmm.X2APICOff
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return "", nil, err
	}
	defer vm.Close()
	res := vm.Run(b.timeout)
	log := con.String()
	if res.Err != nil || res.Status != 1 || !strings.Contains(log, "PASS rtt") {
		return "", nil, fmt.Errorf("rtt.elf %q did not pass (status %d, %s, %v); its console:\n%s", cfg.Cmdline, res.Status, res.How, res.Err, log)
	}
	secs := map[int]accounting.Section{}
	for _, s := range vm.Accounting().Sections() {
		secs[s.ID] = s
	}
	return log, secs, nil
}

// oneOnKVM runs rtt.elf once in mode on KVM's in-kernel LAPIC (govmm
// --lapic=kvm: the same VM, devices and guest, KVM's LAPIC, KVM's halt
// polling) and returns its halted and spinning rows, their exits KVM's
// statistics over each section: the guest's exits (KVM's less those for
// the host's own interrupts) by what KVM says they were. A spinning
// receiver's kick is a host interrupt (KVM's posting IPI) there, counted
// with the host's timer ticks in irq_exits, which the row shows apart
// and does not count.
func (b *rttBench) oneOnKVM(mode string) ([]benchreport.RTTRow, error) {
	guest := ipiBenchModes[mode]
	cmdline := fmt.Sprintf("mode=%s rounds=%d gap=%d", guest, b.rounds, b.gap)
	con := &vmm.ConsoleLog{}
	cfg := vmm.Config{CPUs: 2, Kernel: b.guest, Cmdline: cmdline, Console: con, IOMMU: true, LAPIC: vmm.LAPICKVM, CPUAffinity: b.affinity}
	log, secs, err := b.runRTT(cfg, con, guest)
	if err != nil {
		return nil, err
	}
	return rttRows(log, func(section int) (benchreport.RTTRow, error) {
		sec, ok := secs[section]
		switch {
		case !ok || len(sec.CPUs) != 2:
			return benchreport.RTTRow{}, fmt.Errorf("govmm recorded no section %d", section)
		case sec.KVM == nil:
			return benchreport.RTTRow{}, fmt.Errorf("section %d has no KVM statistics: %s", section, sec.KVMErr)
		}
		r := benchreport.RTTRow{Mode: mode, GuestMode: guest, Delivery: benchreport.GovmmKVMLAPIC, HaltPoll: "kvm"}
		bsp, recv := sec.KVM[0], sec.KVM[1]
		r.SenderExits, r.RecvExits = bsp.GuestExits(), recv.GuestExits()
		hlt, win := recv[accounting.KVMHaltExits], recv[accounting.KVMIRQWindowExits]
		r.RecvByCause = map[string]uint64{"hlt": hlt, "irq_window": win,
			"eoi_and_other":        r.RecvExits - min(r.RecvExits, hlt+win),
			"host_irq_not_counted": recv[accounting.KVMIRQExits]}
		r.Wakeups, r.Polls, r.PollHits = recv[accounting.KVMHaltWakeup], recv[accounting.KVMHaltAttemptedPoll], recv[accounting.KVMHaltSuccessfulPoll]
		return r, nil
	})
}

// floorIPIKinds are the modes the IPI floor has, by the floor VMM's kind:
// physical destinations, the ICR as an x2APIC MSR or xAPIC MMIO writes.
var floorIPIKinds = map[string]string{"x2apic-phys": "ipi-x2apic", "xapic-phys": "ipi-xapic"}

var reFloorIPI = regexp.MustCompile(`(?m)^floor-ipi kind=(\S+) receiver=(\w+) rounds=(\d+) gap=\d+ cycles=(\d+) min=(\d+) max=(\d+) ` +
	`sender_exits=(\d+) receiver_exits=(\d+) kicks=(\d+) wakeups=(\d+) windows=(\d+) median=(\d+)$`)

// floorIPI runs the IPI floor (the floor VMM on rttloop.bin, the same
// round-trip code as rtt.elf's) once in mode, if the floor has it, and adds
// its halted and spinning round trips to rows.
func (b *rttBench) floorIPI(mode string, rows *[2]benchreport.RTTRow) error {
	kind, ok := floorIPIKinds[mode]
	if b.floor == nil || b.ipiBlob == "" || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	args := []string{"-k", b.floor.kvmPath, b.ipiBlob, kind, strconv.Itoa(b.rounds), strconv.Itoa(b.gap)}
	if b.affinityFlag != "" {
		args = append([]string{"-c", b.affinityFlag}, args...)
	}
	cmd := exec.CommandContext(ctx, b.floor.floorVMM, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("the IPI floor (%s %s): %v: %s", filepath.Base(b.floor.floorVMM), kind, err, strings.TrimSpace(string(out)))
	}
	ms := reFloorIPI.FindAllStringSubmatch(string(out), -1)
	if len(ms) != 2 || ms[0][2] != "halted" || ms[1][2] != "spinning" {
		return fmt.Errorf("the IPI floor (%s): want a halted and a spinning line, got:\n%s", kind, out)
	}
	for i, m := range ms {
		u := func(j int) uint64 { v, _ := strconv.ParseUint(m[j], 10, 64); return v }
		r := benchreport.RTTRow{Mode: mode, GuestMode: ipiBenchModes[mode], Delivery: benchreport.FloorIPI, Receiver: m[2],
			HaltPoll: "off", Rounds: u(3), Cycles: u(4), MinCycles: u(5), MaxCycles: u(6), SenderExits: u(7), RecvExits: u(8),
			Kicks: u(9), Wakeups: u(10), Medians: []uint64{u(12)}}
		r.RecvByCause = map[string]uint64{"kick": r.Kicks, "hlt": r.Wakeups, "window": u(11)}
		r.RecvByCause["eoi"] = r.RecvExits - min(r.RecvExits, r.Kicks+r.Wakeups+u(11))
		rows[i].Add(r)
	}
	fmt.Fprintf(b.progress, "%s on the IPI floor (C VMM): halted %.0f cycles/RT, spinning %.0f\n",
		mode, rows[0].CyclesPerRTT(), rows[1].CyclesPerRTT())
	return nil
}
