package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/benchreport"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/internal/ipirecv"
	"github.com/govmm/govmm/ipicost"
	"github.com/govmm/govmm/vmm"
)

// ipiBenchModes are the table's modes and the ipi.elf mode= each one runs
// (ipicost.X2APIC says whether the VM offers x2APIC). "mixed" (IPIs
// cluster-addressed, device interrupts physical) has no device interrupts
// in a bare-metal guest: its IPIs take the x2APIC cluster ICR path, so it
// runs mode=x2apic-cluster.
var ipiBenchModes = map[string]string{
	"xapic-phys":     "xapic-phys",
	"xapic-flat":     "xapic-flat",
	"xapic-cluster":  "xapic-cluster",
	"x2apic-phys":    "x2apic-phys",
	"x2apic-cluster": "x2apic-cluster",
	"mixed":          "x2apic-cluster",
	"pv":             "pv",
}

// ipiDeliveries are the delivery paths: plain, plain with the guest using
// PV EOI (vmm.Config.PVEOI), and AVIC-style delivery (vmm.Config.AVIC,
// which implies PV EOI; the guest uses it).
var ipiDeliveries = map[string]bool{"plain": true, "pveoi": true, "avic": true}

var ipiBenchNote = `Cells: **sender exits per IPI / exits per receiving CPU**. The sender is
the BSP; an IPI is one unicast send or one multicast to all its destinations
(APIC IDs 1..N; with --aligned, in cluster modes, IDs C..C+N-1 from the
first cluster without the BSP, C its width), however many ICR writes the
mode needs for it. A receiver's
figure is its exits in the section divided by the IPIs it received; the
receivers halt between IPIs: ipi.elf sends to a CPU, and marks a section's
start and end, only once its receivers have been in HLT for a while
(its gap=), so each delivery wakes a halted CPU (one HLT exit, no kick) and
a section holds exactly its receivers' HLT exits. The receiving CPUs count
their HLTs, wake-ups and EOIs themselves; report.csv has those counts
beside govmm's. ` + ipicost.Summary + ` [n] marks a figure
above its minimum, with the reason below. **mixed** sends IPIs
cluster-addressed while device interrupts stay physical; a bare-metal guest
has no device interrupts here, so mixed is the x2APIC cluster ICR path
(ipi.elf mode=x2apic-cluster, measured in runs of its own). Delivery:
plain; pveoi = plain path with the guest's EOIs through PV EOI (--pv-eoi);
avic = AVIC-style delivery (--avic, which implies PV EOI; the guest uses it).`

// ipiBench is one 'govmm bench-ipi' configuration.
type ipiBench struct {
	cpus, rounds int
	aligned      bool // multicast sets start at cluster 1 (ipi.elf aligned=1)
	modes        []string
	dests        []int
	deliveries   []string
	guest        []byte
	timeout      time.Duration
	progress     io.Writer
	// late is each run's "# late" lines: IPIs ipi.elf saw arrive only
	// after its first limit (delivered once all the same; a lost one
	// fails the run).
	late []string
}

// ipiGuestPath is where 'make guests' puts ipi.elf.
func ipiGuestPath() string {
	d := os.Getenv("GOVMM_GUEST_DIR")
	if d == "" {
		d = filepath.Join(cacheDir(), "guest")
	}
	return filepath.Join(d, "ipi.elf")
}

// cmdBenchIPI is 'govmm bench-ipi': run ipi.elf once per mode, delivery
// path and multicast destination count, and write the exits-per-IPI table.
func cmdBenchIPI(args []string, stdout, stderr io.Writer) (int, error) {
	b, out, err := parseBenchIPIFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	tab, err := b.run()
	if err != nil {
		return 0, err
	}
	aligned := ""
	if b.aligned {
		aligned = " --aligned"
	}
	tab.Note = fmt.Sprintf("Produced by `govmm bench-ipi --cpus %d --modes %s --dests %s --delivery %s --rounds %d%s` "+
		"(%s, %v).\n\n%s", b.cpus, strings.Join(b.modes, ","), joinInts(b.dests), strings.Join(b.deliveries, ","),
		b.rounds, aligned, time.Now().UTC().Format("2006-01-02"), time.Since(start).Round(time.Second), ipiBenchNote)
	tab.Note += lateNote(b.late)
	return 0, writeBenchTable(out, tab, stdout)
}

// parseBenchIPIFlags reads bench-ipi's command line into the benchmark
// and the report's directory, and reads the guest.
func parseBenchIPIFlags(args []string, stderr io.Writer) (*ipiBench, string, error) {
	fs := benchFlagSet("bench-ipi", stderr)
	cpus := fs.Int("cpus", 65, "vCPUs of each VM (1 to 1024; xAPIC modes need 255 or fewer)")
	modeList := fs.String("modes", "xapic-phys,xapic-cluster,x2apic-phys,x2apic-cluster,mixed,pv",
		"comma-separated modes: xapic-phys, xapic-flat, xapic-cluster, x2apic-phys, x2apic-cluster, mixed, pv")
	destList := fs.String("dests", "1,2,4,16,32,64", "comma-separated multicast destination counts (APIC IDs 1..N)")
	aligned := fs.Bool("aligned", false, "in cluster modes, multicast to APIC IDs C..C+N-1 (C the cluster width: 4 xAPIC, 16 x2APIC), "+
		"the first cluster without the BSP, so N CPUs take the cluster-aligned minimum of ICR writes")
	delList := fs.String("delivery", "plain,pveoi,avic", "comma-separated delivery paths: plain, pveoi, avic")
	lapics := fs.String("lapic", "govmm,kvm", "comma-separated LAPICs: govmm (its own, every delivery path) and kvm (the same VM on KVM's "+
		"in-kernel LAPIC, --lapic=kvm: delivery \""+benchreport.GovmmKVMLAPIC+"\", its exits KVM's own count; not for pv)")
	rounds := fs.Int("rounds", 2, "IPIs per destination in each section (ipi.elf rounds=)")
	guest := fs.String("guest", ipiGuestPath(), "the ipi.elf guest")
	out := fs.String("out", "govmm-bench-ipi", "directory for report.md and report.csv")
	timeout := fs.Duration("timeout", 2*time.Minute, "limit per run")
	if err := parseNoArgs(fs, args); err != nil {
		return nil, "", err
	}
	b := &ipiBench{cpus: *cpus, rounds: *rounds, aligned: *aligned, timeout: *timeout, progress: stderr}
	if b.cpus < 2 || b.cpus > 1024 {
		return nil, "", fmt.Errorf("--cpus %d: want 2 to 1024", b.cpus)
	}
	if b.rounds < 1 {
		return nil, "", fmt.Errorf("--rounds must be at least 1")
	}
	var err error
	if b.modes, err = parseIPIModes(*modeList); err != nil {
		return nil, "", err
	}
	if b.deliveries, err = parseDeliveries(*delList); err != nil {
		return nil, "", err
	}
	govmmLAPIC, kvmLAPIC, err := parseLAPICs(*lapics)
	if err != nil {
		return nil, "", err
	}
	if !govmmLAPIC {
		b.deliveries = nil
	}
	if kvmLAPIC {
		b.deliveries = append(b.deliveries, benchreport.GovmmKVMLAPIC)
	}
	if b.dests, err = intList(*destList, 1, 1023, "--dests: %q is not a destination count from 1 to 1023"); err != nil {
		return nil, "", err
	}
	sort.Ints(b.dests)
	if b.guest, err = os.ReadFile(*guest); err != nil {
		return nil, "", fmt.Errorf("cannot read the IPI guest (run 'make guests'): %w", err)
	}
	return b, *out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// run measures every case. Each mode and delivery path takes one run per
// destination count; the unicast row comes from the first of them.
func (b *ipiBench) run() (*benchreport.IPITable, error) {
	tab := &benchreport.IPITable{Emulating: vmm.HostEmulates()}
	total, i := len(b.modes)*len(b.deliveries)*len(b.dests), 0
	for _, m := range b.modes {
		guest := ipiBenchModes[m]
		members, first := ipicost.Members(guest, b.cpus), ipicost.First(guest, b.aligned)
		for _, del := range b.deliveries {
			if del == benchreport.GovmmKVMLAPIC && m == "pv" {
				i += len(b.dests) // govmm's PV send-IPI is its own LAPIC's
				continue
			}
			row := func(kind string, dests int) benchreport.IPIRow {
				r := benchreport.IPIRow{Mode: m, GuestMode: guest, Delivery: del, Kind: kind, Dests: dests, First: first, CPUs: b.cpus}
				if kind == "unicast" {
					r.First = 1 // one IPI to each member AP in turn
				}
				return r
			}
			if !ipicost.X2APIC(guest) && b.cpus > 255 {
				why := fmt.Sprintf("%s needs 255 vCPUs or fewer (xAPIC IDs stop at 254)", m)
				r := row("unicast", 1)
				r.Skipped = why
				tab.Rows = append(tab.Rows, r)
				for _, d := range b.dests {
					r := row("multicast", d)
					r.Skipped = why
					tab.Rows = append(tab.Rows, r)
				}
				i += len(b.dests)
				fmt.Fprintf(b.progress, "[%d/%d] %s %s: skipped, %s\n", i, total, m, del, why)
				continue
			}
			haveUni := false
			for _, d := range b.dests {
				i++
				if !ipicost.Fits(guest, b.cpus, first, d) {
					r := row("multicast", d)
					r.Skipped = fmt.Sprintf("%s on %d vCPUs has %d APs to address (%s)", guest, b.cpus, members, ipicost.MemberRule(guest))
					if first > 1 {
						r.Skipped = fmt.Sprintf("APIC IDs %d..%d: %s", first, first+d-1, r.Skipped)
					}
					tab.Rows = append(tab.Rows, r)
					fmt.Fprintf(b.progress, "[%d/%d] %s %s dests=%d: skipped, %s\n", i, total, m, del, d, r.Skipped)
					continue
				}
				start := time.Now()
				uni, multi, err := b.one(row("unicast", 1), row("multicast", d))
				if err != nil {
					return nil, fmt.Errorf("%s, %s, dests=%d: %w", m, del, d, err)
				}
				if !haveUni {
					tab.Rows = append(tab.Rows, uni)
					haveUni = true
				}
				tab.Rows = append(tab.Rows, multi)
				fmt.Fprintf(b.progress, "[%d/%d] %s %s dests=%d: %v; multicast sender %.2f exits/IPI, receiver %.2f/delivery\n",
					i, total, m, del, d, time.Since(start).Round(time.Millisecond), multi.SenderPerIPI(), multi.RecvPerDelivery())
			}
			if !haveUni { // every count was too large: measure unicast alone
				uni, _, err := b.one(row("unicast", 1), row("multicast", 0))
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", m, del, err)
				}
				tab.Rows = append(tab.Rows, uni)
			}
		}
	}
	return tab, nil
}

var reIPISummary = regexp.MustCompile(`# summary mode=(\S+) cpus=(\d+) rounds=(\d+) member_aps=(\d+) unicast=(\d+) multicast_dests=(\d+) multicast_icrs=(\d+)`)

// reIPILate and reIPILost are ipi.elf's verdicts on an IPI that had not
// arrived within its first limit: it came later (late, the run goes on)
// or never (lost, the guest fails).
var (
	reIPILate = regexp.MustCompile(`(?m)^# late (.*)$`)
	reIPILost = regexp.MustCompile(`lost: vector [0-9a-f]+ delivered \d+ times, want \d+, after \d+ s`)
)

// passed says why a run of ipi.elf did not pass, naming a lost IPI, and
// keeps (and shows) the IPIs a passed run saw arrive late, for the case
// named what.
func (b *ipiBench) passed(cmdline string, res vmm.Result, log, what string) error {
	if res.Err != nil || res.Status != 1 || !strings.Contains(log, "PASS ipi") {
		why := "did not pass"
		if m := reIPILost.FindString(log); m != "" {
			why = "lost an IPI (" + m + ")"
		}
		return fmt.Errorf("ipi.elf %q %s (status %d, %s, %v); its console:\n%s", cmdline, why, res.Status, res.How, res.Err, log)
	}
	for _, l := range reIPILate.FindAllStringSubmatch(log, -1) {
		late := what + ": " + l[1]
		b.late = append(b.late, late)
		fmt.Fprintf(b.progress, "late: %s\n", late)
	}
	return nil
}

// lateNote is the report's paragraph on late IPIs ("" without any).
func lateNote(late []string) string {
	if len(late) == 0 {
		return ""
	}
	return "\n\nLate IPIs (each delivered once, but only after ipi.elf's first limit, 10 s and 1 s per 16 CPUs; " +
		"a lost one would have failed the run): " + strings.Join(late, "; ") + "."
}

// reIPIFirst is the summary's first multicast APIC ID (ipi.elf aligned=).
var reIPIFirst = regexp.MustCompile(`# summary .* multicast_first=(\d+)`)

// vmConfig is the VM of one run of ipi.elf for the case of uni and multi:
// its command line, and whether it is on KVM's LAPIC (--lapic=kvm).
func (b *ipiBench) vmConfig(uni, multi benchreport.IPIRow, con *vmm.ConsoleLog) (vmm.Config, bool) {
	guest := ipiBenchModes[uni.Mode]
	cmdline := fmt.Sprintf("mode=%s rounds=%d dests=%d", guest, b.rounds, multi.Dests)
	if b.aligned {
		cmdline += " aligned=1"
	}
	kvmLAPIC := uni.Delivery == benchreport.GovmmKVMLAPIC
	if uni.Delivery != "plain" && !kvmLAPIC {
		cmdline += " pveoi=1"
	}
	// Sections 1 and 2 only, which the table reads: the others are the
	// tests' (TestIPIExitCounts), and on the nested hosts they meet the
	// hosts' errata (docs/hosts.md: Bochs 2.7 loses an NMI of section 5;
	// KVM's LAPIC under QEMU TCG delivers section 3's self-included
	// broadcast twice now and then).
	cmdline += " sections=2"
	cfg := vmm.Config{CPUs: b.cpus, Kernel: b.guest, Cmdline: cmdline, Console: con, IOMMU: true, PVIPI: !kvmLAPIC,
		PVEOI: uni.Delivery == "pveoi", AVIC: uni.Delivery == "avic"}
	if kvmLAPIC {
		cfg.LAPIC = vmm.LAPICKVM
	}
	if !ipicost.X2APIC(guest) {
		cfg.X2APIC = vmm.X2APICOff
	}
	return cfg, kvmLAPIC
}

// one runs ipi.elf once and fills the unicast (section 1) and multicast
// (section 2) rows.
func (b *ipiBench) one(uni, multi benchreport.IPIRow) (benchreport.IPIRow, benchreport.IPIRow, error) {
	con := &vmm.ConsoleLog{}
	cfg, kvmLAPIC := b.vmConfig(uni, multi, con)
	cmdline := cfg.Cmdline
	vm, err := vmm.New(cfg)
	if err != nil {
		return uni, multi, err
	}
	defer vm.Close()
	res := vm.Run(b.timeout)
	log := con.String()
	if err := b.passed(cmdline, res, log, fmt.Sprintf("%s %s dests=%d", uni.Mode, uni.Delivery, multi.Dests)); err != nil {
		return uni, multi, err
	}
	m := reIPISummary.FindStringSubmatch(log)
	if m == nil {
		return uni, multi, fmt.Errorf("ipi.elf printed no summary with multicast_dests=: it predates dests=N, rebuild it ('make guests')")
	}
	unicasts, _ := strconv.ParseUint(m[5], 10, 64)
	if d, _ := strconv.Atoi(m[6]); d != multi.Dests {
		return uni, multi, fmt.Errorf("ipi.elf multicast to %d APs, asked for %d", d, multi.Dests)
	}
	f := reIPIFirst.FindStringSubmatch(log)
	if f == nil {
		return uni, multi, fmt.Errorf("ipi.elf printed no multicast_first=: it predates aligned=1, rebuild it ('make guests')")
	}
	if first, _ := strconv.Atoi(f[1]); first != multi.First {
		return uni, multi, fmt.Errorf("ipi.elf multicast from APIC ID %d, want %d", first, multi.First)
	}
	recv, err := ipirecv.Parse(log)
	if err != nil {
		return uni, multi, fmt.Errorf("ipi.elf's receivers' counts: %w", err)
	}
	secs := map[int]accounting.Section{}
	for _, s := range vm.Accounting().Sections() {
		secs[s.ID] = s
	}
	fill := b.fill
	if kvmLAPIC {
		icrs := map[int]uint64{}
		for _, m := range reIPISectionSends.FindAllStringSubmatch(log, -1) {
			id, _ := strconv.Atoi(m[1])
			icrs[id], _ = strconv.ParseUint(m[2], 10, 64)
		}
		fill = func(r *benchreport.IPIRow, sec accounting.Section, ipis uint64, guest ipirecv.Section) error {
			return b.fillFromKVM(r, sec, ipis, icrs[sec.ID], guest)
		}
	}
	if err := fill(&uni, secs[1], unicasts, recv[1]); err != nil {
		return uni, multi, fmt.Errorf("section 1: %w", err)
	}
	var multicasts uint64
	if multi.Dests > 0 {
		multicasts = uint64(b.rounds)
	}
	if err := fill(&multi, secs[2], multicasts, recv[2]); err != nil {
		return uni, multi, fmt.Errorf("section 2: %w", err)
	}
	return uni, multi, nil
}

// reIPISectionSends is ipi.elf's count of a section's ICR writes.
var reIPISectionSends = regexp.MustCompile(`(?m)^# section (\d+) \S+: icr_sends=(\d+) `)

// fillFromKVM is fill for a run on KVM's LAPIC (--lapic=kvm): the
// section's exits are KVM's statistics (the guest's: KVM's exits less the
// host's interrupts'), its deliveries the interrupts KVM injected into the
// receivers, its ICR writes the guest's own count (icrs). A spinning
// receiver's kick is a host interrupt there, not counted (recvWhy says
// how many).
func (b *ipiBench) fillFromKVM(r *benchreport.IPIRow, sec accounting.Section, ipis, icrs uint64, guest ipirecv.Section) error {
	switch {
	case len(sec.CPUs) != b.cpus:
		return fmt.Errorf("govmm recorded no such section")
	case sec.KVM == nil:
		return fmt.Errorf("the section has no KVM statistics: %s", sec.KVMErr)
	case len(guest) != b.cpus-1:
		return fmt.Errorf("ipi.elf printed its receivers' counts for %d APs, not %d: rebuild it ('make guests')", len(guest), b.cpus-1)
	}
	var recv accounting.KVMCounts
	for _, c := range sec.KVM[1:] {
		for k, n := range c {
			recv[k] += n
		}
	}
	r.IPIs, r.Sends, r.SenderExit, r.RecvExit = ipis, icrs, sec.KVM[0].GuestExits(), recv.GuestExits()
	r.Deliveries = recv[accounting.KVMIRQInjections]
	r.RecvHLT, r.RecvWakeups = recv[accounting.KVMHaltExits], recv[accounting.KVMHaltWakeup]
	r.RecvEOI = r.RecvExit - min(r.RecvExit, r.RecvHLT+recv[accounting.KVMIRQWindowExits])
	g := guest.Sum()
	r.GuestIRQs, r.GuestHLTs, r.GuestWakes, r.GuestEOIs, r.GuestPVEOIs = g.IRQs, g.HLTs, g.Wakes, g.EOIs, g.PVEOIs
	if want := ipis * uint64(r.Dests); r.Deliveries != want {
		return fmt.Errorf("%d IPIs to %d CPUs each: KVM injected %d interrupts on the APs, want %d", ipis, r.Dests, r.Deliveries, want)
	}
	ipiMinimum(r)
	if per := r.SenderPerIPI(); above(per, r.SenderMin) {
		r.SenderWhy = fmt.Sprintf("KVM counted %s sender exits per IPI (%d ICR writes per IPI by the guest's count)",
			strconv.FormatFloat(per, 'f', -1, 64), icrs/max(ipis, 1))
	}
	if r.Deliveries > 0 && above(r.RecvPerDelivery(), r.RecvMin) {
		r.RecvWhy = fmt.Sprintf("receivers' exits per delivery by KVM's statistics: halt %s, interrupt window %s, the rest (EOIs) %s",
			perDelivery(r.RecvHLT, r.Deliveries), perDelivery(recv[accounting.KVMIRQWindowExits], r.Deliveries), perDelivery(r.RecvEOI, r.Deliveries))
	}
	if kicks := recv[accounting.KVMIRQExits]; kicks > 0 && r.Deliveries > 0 {
		r.RecvWhy = strings.TrimPrefix(r.RecvWhy+"; ", "; ") + fmt.Sprintf("host interrupts (kicks among them), not counted: %s per delivery", perDelivery(kicks, r.Deliveries))
	}
	return nil
}

// perDelivery prints n per d.
func perDelivery(n, d uint64) string { return strconv.FormatFloat(float64(n)/float64(d), 'f', -1, 64) }

// above is true when v exceeds min (exact ratios of whole sections; the
// epsilon absorbs float rounding).
func above(v, min float64) bool { return v > min+1e-9 }

// fill reads one section's accounting into r: ipis is how many IPIs the
// guest sent in it, guest what its receiving CPUs counted themselves (by
// APIC ID, every AP).
func (b *ipiBench) fill(r *benchreport.IPIRow, sec accounting.Section, ipis uint64, guest ipirecv.Section) error {
	if len(sec.CPUs) != b.cpus {
		return fmt.Errorf("govmm recorded no such section")
	}
	if len(guest) != b.cpus-1 {
		return fmt.Errorf("ipi.elf printed its receivers' counts for %d APs, not %d: rebuild it ('make guests')", len(guest), b.cpus-1)
	}
	bsp := sec.CPUs[0]
	// The section's HLT exits are exactly its receivers': ipi.elf marks
	// its start and end only once they have been in HLT for a while.
	var recv accounting.Snapshot
	var injected uint64
	for _, s := range sec.CPUs[1:] {
		for c, n := range s.Exits {
			recv.Exits[c] += n
		}
		injected += s.Injected
		r.RecvWakeups += s.Wakeups
	}
	for c, n := range recv.Exits {
		if exitcause.Cause(c).Class() == exitcause.ClassEOI {
			r.RecvEOI += n
		}
	}
	r.RecvHLT, r.RecvKick = recv.Exits[exitcause.HLT], recv.Exits[exitcause.Kick]
	g := guest.Sum()
	r.GuestIRQs, r.GuestHLTs, r.GuestWakes, r.GuestEOIs, r.GuestPVEOIs = g.IRQs, g.HLTs, g.Wakes, g.EOIs, g.PVEOIs
	for k := range bsp.IPISent {
		r.Sends += bsp.IPISent[k]
		r.Deliveries += bsp.IPIDelivered[k]
	}
	r.IPIs, r.SenderExit, r.RecvExit = ipis, bsp.Total(), recv.Total()
	if want := ipis * uint64(r.Dests); r.Deliveries != want || injected != want {
		return fmt.Errorf("%d IPIs to %d CPUs each: govmm delivered %d, injected %d on the APs; want %d",
			ipis, r.Dests, r.Deliveries, injected, want)
	}
	ipiMinimum(r)
	r.SenderWhy = senderWhy(*r, bsp)
	r.RecvWhy = recvWhy(*r, recv)
	return nil
}

// ipiMinimum sets r's minimum figures.
func ipiMinimum(r *benchreport.IPIRow) {
	dests := r.Dests
	if r.Kind == "unicast" {
		dests = 1
	}
	r.SenderMin = ipicost.SenderMin(r.GuestMode, dests)
	r.RecvMin = ipicost.ReceiverMin(r.Delivery != "plain")
}

// sendCause is true for the exits of the send path itself: ICR (and
// ICR2), SELF_IPI and PV send-IPI accesses; not the LAPIC timer's
// initial count (timer_icr).
func sendCause(c exitcause.Cause) bool { return c.Class().IPISend() }

// byCause lists causes with their count per unit, largest first.
func byCause(s accounting.Snapshot, per uint64, keep func(exitcause.Cause) bool) string {
	type cn struct {
		name string
		n    uint64
	}
	var l []cn
	for c, n := range s.Exits {
		if n != 0 && keep(exitcause.Cause(c)) {
			l = append(l, cn{exitcause.Cause(c).String(), n})
		}
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].n != l[j].n {
			return l[i].n > l[j].n
		}
		return l[i].name < l[j].name
	})
	var parts []string
	for _, x := range l {
		parts = append(parts, fmt.Sprintf("%s %s", x.name, strconv.FormatFloat(float64(x.n)/float64(per), 'f', -1, 64)))
	}
	return strings.Join(parts, ", ")
}

// senderWhy explains a sender figure above the minimum.
func senderWhy(r benchreport.IPIRow, bsp accounting.Snapshot) string {
	if r.IPIs == 0 {
		return ""
	}
	k := ipicost.ExitsPerICR(r.GuestMode)
	var why []string
	if r.Kind == "multicast" {
		if got, least := ipicost.ICRs(r.GuestMode, r.First, r.Dests), ipicost.MinICRs(r.GuestMode, r.Dests); got > least {
			why = append(why, fmt.Sprintf("APIC IDs %d..%d touch %d clusters of %d (cluster 0 also holds the BSP, ID 0; --aligned starts at cluster 1): %d ICR writes, not ceil(%d/%d) = %d",
				r.First, r.First+r.Dests-1, got, ipicost.ClusterSize(r.GuestMode), got, r.Dests, ipicost.ClusterSize(r.GuestMode), least))
		}
	}
	var sends uint64
	for c, n := range bsp.Exits {
		if sendCause(exitcause.Cause(c)) {
			sends += n
		}
	}
	if extra := r.SenderExit - sends; extra > 0 {
		why = append(why, "exits besides the send path, per IPI: "+byCause(bsp, r.IPIs, func(c exitcause.Cause) bool { return !sendCause(c) }))
	}
	if len(why) == 0 && float64(r.SenderExit) > float64(r.IPIs)*r.SenderMin {
		why = append(why, fmt.Sprintf("%d send exits per ICR write expected, exits per IPI: %s", k,
			byCause(bsp, r.IPIs, func(exitcause.Cause) bool { return true })))
	}
	return strings.Join(why, "; ")
}

// recvWhy explains a receiver figure above the minimum: the causes per
// delivery, with what the unexpected ones mean.
func recvWhy(r benchreport.IPIRow, recv accounting.Snapshot) string {
	if r.Deliveries == 0 {
		return ""
	}
	s := "receivers' exits per delivery: " + byCause(recv, r.Deliveries, func(exitcause.Cause) bool { return true })
	var notes []string
	if recv.Exits[exitcause.IRQWindow] > 0 {
		notes = append(notes, "irq_window: the IPI came while the receiver could not take it (IF=0 or STI shadow)")
	}
	if recv.Exits[exitcause.Kick]+recv.Exits[exitcause.KickSpurious] > 0 {
		notes = append(notes, "kick: the receiver was in KVM_RUN, not halted, when the IPI came")
	}
	if r.Delivery != "plain" {
		for c, n := range recv.Exits {
			if n > 0 && exitcause.Cause(c).Class() == exitcause.ClassEOI {
				notes = append(notes, "EOI exits despite PV EOI: the VMM did not arm it (another interrupt pending)")
				break
			}
		}
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}
