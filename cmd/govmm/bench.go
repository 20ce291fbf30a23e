package main

import (
	"fmt"
	"io"
	"math"
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
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// benchModes are the configurations 'govmm bench' compares: the four APIC
// modes, then cluster mode with govmm's PV send-IPI, and with PV EOI too,
// and cluster mode with AVIC-style delivery (which implies PV EOI).
var benchModes = map[string]struct {
	apic               string
	pvIPI, pvEOI, avic bool
}{
	"off":          {apic: "off"},
	"physical":     {apic: "physical"},
	"cluster":      {apic: "cluster"},
	"mixed":        {apic: "mixed"},
	"pv-ipi":       {apic: "cluster", pvIPI: true},
	"pv-ipi+eoi":   {apic: "cluster", pvIPI: true, pvEOI: true},
	"cluster+eoi":  {apic: "cluster", pvEOI: true},
	"cluster+avic": {apic: "cluster", avic: true},
}

var reIPIBench = regexp.MustCompile(`govmm-ipibench: section (\d+) ([^:]+): (\d+) ops, (\d+) cycles/op`)
var reIPIBenchCPU = regexp.MustCompile(`govmm-ipibench: \d+ ops per kind, \d+ CPUs, from CPU (\d+)`)

// cmdBench is 'govmm bench': boot govmm's kernel once per mode and CPU
// count with its IPI microbenchmark, and write the report.
func cmdBench(args []string, stdout, stderr io.Writer) (int, error) {
	fs := benchFlagSet("bench", stderr)
	cpuList := fs.String("cpus", "2,4", "comma-separated vCPU counts")
	modeList := fs.String("modes", "off,physical,cluster,mixed,pv-ipi,pv-ipi+eoi", "comma-separated modes: off, physical, cluster, mixed, pv-ipi, pv-ipi+eoi, cluster+eoi, cluster+avic; "+
		"the other commands' names are taken too: xapic, x2apic-phys, x2apic-cluster (as --x2apic's), pv (pv-ipi), +pveoi (+eoi)")
	ops := fs.Int("ops", 50, "operations per kind")
	lapics := fs.String("lapic", "govmm", "comma-separated LAPICs: govmm (its own) and kvm (the same boot on KVM's in-kernel LAPIC, --lapic=kvm, "+
		"rows MODE/kvm, their exits KVM's own count; not for the modes of govmm's PV send-IPI or AVIC-style delivery)")
	out := fs.String("out", "govmm-bench", "directory for report.md, report.csv and the SVG plots")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit per boot")
	if err := parseNoArgs(fs, args); err != nil {
		return 0, err
	}
	cpus, err := intList(*cpuList, 2, math.MaxInt, "--cpus: %q is not a vCPU count of 2 or more")
	if err != nil {
		return 0, err
	}
	if *ops < 1 {
		return 0, fmt.Errorf("--ops must be at least 1")
	}
	runs, err := benchRuns(*modeList, *lapics)
	if err != nil {
		return 0, err
	}
	im, err := loadKernelImages()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return 0, err
	}
	rep := &benchreport.Report{Emulating: vmm.HostEmulates(),
		Note: fmt.Sprintf("govmm's guest kernel, govmm.ipibench=%d, run %s.", *ops, time.Now().UTC().Format(time.RFC3339))}
	total, i := len(runs)*len(cpus), 0
	for _, run := range runs {
		for _, n := range cpus {
			i++
			fmt.Fprintf(stdout, "[%d/%d] %s, %d vCPUs: booting ... ", i, total, run.label(), n)
			start := time.Now()
			rows, err := benchOne(run, n, *ops, im, *timeout)
			if err != nil {
				fmt.Fprintln(stdout, "failed")
				return 0, fmt.Errorf("%s on %d vCPUs: %w", run.label(), n, err)
			}
			rep.Rows = append(rep.Rows, rows...)
			fmt.Fprintf(stdout, "%v", time.Since(start).Round(time.Second))
			for _, r := range rows {
				fmt.Fprintf(stdout, "; s%d %.2f exits/op", r.Section, r.Total())
			}
			fmt.Fprintln(stdout)
		}
	}
	return 0, writeBench(rep, *out, stdout)
}

// benchRuns reads bench's --modes and --lapic into its runs: each mode on
// each LAPIC named, but on KVM's those of govmm's PV send-IPI and
// AVIC-style delivery, which are govmm's LAPIC's.
func benchRuns(modeList, lapics string) ([]benchRun, error) {
	onGovmm, onKVM, err := parseLAPICs(lapics)
	if err != nil {
		return nil, err
	}
	var runs []benchRun
	for _, name := range strings.Split(modeList, ",") {
		m := benchModeName(name)
		bm, ok := benchModes[m]
		if !ok {
			return nil, fmt.Errorf("--modes: unknown mode %q (want off, physical, cluster, mixed, pv-ipi, pv-ipi+eoi, cluster+eoi or cluster+avic)", name)
		}
		if onGovmm {
			runs = append(runs, benchRun{m, vmm.LAPICGovmm})
		}
		if onKVM && !bm.pvIPI && !bm.avic {
			runs = append(runs, benchRun{m, vmm.LAPICKVM})
		}
	}
	return runs, nil
}

// benchRun is one configuration of 'govmm bench': a mode on a LAPIC.
type benchRun struct {
	mode  string
	lapic vmm.LAPICKind
}

// label is the run's name in the report: the mode, and "/kvm" on KVM's
// LAPIC.
func (r benchRun) label() string {
	if r.lapic == vmm.LAPICKVM {
		return r.mode + "/kvm"
	}
	return r.mode
}

func benchOne(run benchRun, cpus, ops int, im kernelImages, timeout time.Duration) ([]benchreport.Row, error) {
	mode := run.label()
	bm := benchModes[run.mode]
	m, err := linuxguest.CheckMode(bm.apic, cpus, true)
	if err != nil {
		return nil, err
	}
	b := kernelBench{mode: m, cpus: cpus, pvIPI: bm.pvIPI, pvEOI: bm.pvEOI, avic: bm.avic, lapic: run.lapic, cmdline: fmt.Sprintf("govmm.ipibench=%d", ops)}
	log, sections, err := b.run(im, timeout)
	if err != nil {
		return nil, err
	}
	sender := 0
	if m := reIPIBenchCPU.FindStringSubmatch(log); m != nil {
		sender, _ = strconv.Atoi(m[1])
	}
	cycles := map[int]float64{}
	kinds := map[int]string{}
	for _, m := range reIPIBench.FindAllStringSubmatch(log, -1) {
		s, _ := strconv.Atoi(m[1])
		kinds[s] = m[2]
		cycles[s], _ = strconv.ParseFloat(m[4], 64)
	}
	var rows []benchreport.Row
	for _, sec := range sections {
		if _, ok := kinds[sec.ID]; !ok {
			continue
		}
		r := benchreport.Row{Mode: mode, CPUs: cpus, Section: sec.ID, Kind: kinds[sec.ID], Ops: ops, Cycles: cycles[sec.ID]}
		if run.lapic == vmm.LAPICKVM {
			if err := kvmBenchRow(&r, sec, sender); err != nil {
				return nil, err
			}
			rows = append(rows, r)
			continue
		}
		govmmBenchRow(&r, sec, sender)
		rows = append(rows, r)
	}
	if len(rows) != 3 {
		return nil, fmt.Errorf("the microbenchmark reported %d of its 3 sections (is govmm's kernel built with patch 0003?)", len(rows))
	}
	return rows, nil
}

// govmmBenchRow fills r from a section on govmm's LAPIC: its exits are
// govmm's counts, the sender's ICR writes among them.
func govmmBenchRow(r *benchreport.Row, sec accounting.Section, sender int) {
	var recv [exitcause.NumCauses]uint64
	for cpu, s := range sec.CPUs {
		e := float64(s.Total()) / float64(r.Ops)
		if cpu != sender {
			for c, v := range s.Exits {
				recv[c] += v
			}
			r.RecvExit += e
			continue
		}
		r.SenderExit = e
		for c, v := range s.Exits {
			if exitcause.Cause(c).Class().IPISend() {
				r.ICRPerOp += float64(v) / float64(r.Ops)
			}
		}
	}
	r.RecvCauses = causesPerOp(recv[:], r.Ops)
}

// kvmBenchRow fills r from a section on KVM's LAPIC: its exits are KVM's
// statistics (the guest's: KVM's less those for the host's own
// interrupts), the receivers' by what KVM says they were; the sender's
// ICR writes are not told apart from its other exits there.
func kvmBenchRow(r *benchreport.Row, sec accounting.Section, sender int) error {
	if sec.KVM == nil {
		return fmt.Errorf("section %d has no KVM statistics: %s", sec.ID, sec.KVMErr)
	}
	var recv accounting.KVMCounts
	for cpu, c := range sec.KVM {
		e := float64(c.GuestExits()) / float64(r.Ops)
		if cpu == sender {
			r.SenderExit = e
			continue
		}
		r.RecvExit += e
		for k, n := range c {
			recv[k] += n
		}
	}
	per := func(n uint64) string { return strconv.FormatFloat(float64(n)/float64(r.Ops), 'f', 2, 64) }
	r.RecvCauses = fmt.Sprintf("kvm: halt %s irq_window %s injections %s host_irq_not_counted %s", per(recv[accounting.KVMHaltExits]),
		per(recv[accounting.KVMIRQWindowExits]), per(recv[accounting.KVMIRQInjections]), per(recv[accounting.KVMIRQExits]))
	return nil
}

// causesPerOp formats exits by cause per operation, the largest first,
// causes under 0.01 per operation left out.
func causesPerOp(exits []uint64, ops int) string {
	type kv struct {
		cause string
		n     uint64
	}
	var all []kv
	for c, n := range exits {
		if n*100 >= uint64(ops) && n > 0 {
			all = append(all, kv{exitcause.Cause(c).String(), n})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].n > all[j].n })
	parts := make([]string, len(all))
	for i, e := range all {
		parts[i] = fmt.Sprintf("%s %.2f", e.cause, float64(e.n)/float64(ops))
	}
	return strings.Join(parts, " ")
}

func writeBench(rep *benchreport.Report, dir string, stdout io.Writer) error {
	if err := writeReport(dir, rep); err != nil {
		return err
	}
	create := func(name string, write func(io.Writer) error) error {
		return writeFile(filepath.Join(dir, name), write)
	}
	names := map[int]string{1: "unicast round trip", 2: "call-function on all other CPUs", 3: "flush_tlb_all"}
	for sec, name := range names {
		if err := create(fmt.Sprintf("exits-section%d.svg", sec), func(w io.Writer) error {
			return rep.WriteSVG(w, sec, "exits per "+name+" (all vCPUs)", "exits per operation", benchreport.Row.Total)
		}); err != nil {
			return err
		}
		if err := create(fmt.Sprintf("cycles-section%d.svg", sec), func(w io.Writer) error {
			return rep.WriteSVG(w, sec, "guest cycles per "+name, "guest TSC cycles per operation",
				func(r benchreport.Row) float64 { return r.Cycles })
		}); err != nil {
			return err
		}
	}
	rep.WriteMarkdown(stdout)
	fmt.Fprintf(stdout, "\nreport written to %s (report.md, report.csv, exits-section*.svg, cycles-section*.svg)\n", dir)
	return nil
}

// intList parses a comma-separated flag value of whole numbers from lo to
// hi; bad is the error for a field that is not one, with %q for the field.
func intList(list string, lo, hi int, bad string) ([]int, error) {
	var v []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf(bad, f)
		}
		v = append(v, n)
	}
	return v, nil
}

// writeReport writes a bench report's report.md and report.csv into dir.
func writeReport(dir string, rep interface {
	WriteMarkdown(io.Writer)
	WriteCSV(io.Writer) error
}) error {
	if err := writeFile(filepath.Join(dir, "report.md"), func(w io.Writer) error { rep.WriteMarkdown(w); return nil }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.csv"), rep.WriteCSV)
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
