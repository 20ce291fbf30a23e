package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/govmm/govmm/benchreport"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/vmm"
)

var floorBenchNote = `The floor is bench/floor/floorvmm.c: one vCPU, no in-kernel irqchip, MSR
exits to user space as govmm asks for them, and a run loop that is KVM_RUN
and a switch answering the exit, nothing else. Both VMMs run the same bytes
(guest/baremetal/floorloop.S): a loop of COUNT exits of one kind, timed with
the guest's TSC; govmm runs it inside floor.elf, each loop in an accounting
section whose exits must be exactly COUNT of the cause named. Repetitions
alternate between the two VMMs, so that both see the same machine; the ratio
is of the medians (and of the fastest repetitions). Cycles are this
machine's and compare only side by side; the ratio is the figure.`

// floorKinds are floorloop.S's loops, in its order, with the cause govmm
// counts for each.
var floorKinds = []struct {
	name  string
	cause exitcause.Cause
}{
	{"port", exitcause.PIOOther},
	{"mmio", exitcause.MMIOOther},
	{"msr", exitcause.APIC(true, true, uint16(vlapic.RegTPR))},
}

type floorBench struct {
	count, reps int
	floorVMM    string
	blob, guest string
	kvmPath     string
	guestImage  []byte
	timeout     time.Duration
	progress    io.Writer
	kvmRun      vmm.KVMRun // govmm's --kvm-run
}

func floorVMMPath() string  { return filepath.Join(cacheDir(), "bin", "floorvmm") }
func floorBlobPath() string { return filepath.Join(filepath.Dir(ipiGuestPath()), "floorloop.bin") }

// newFloorBench is the floor side of the benchmark: the C VMM and its loop,
// checked to exist.
func newFloorBench(floorVMM, blob, kvmPath string, count int) (*floorBench, error) {
	for _, f := range []struct{ path, what string }{{floorVMM, "the floor VMM (run 'make floorvmm')"},
		{blob, "floorloop.bin (run 'make guests')"}} {
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("cannot find %s: %w", f.what, err)
		}
	}
	return &floorBench{count: count, reps: 1, floorVMM: floorVMM, blob: blob, kvmPath: kvmPath}, nil
}

// perExit is the median over reps loops of kind of the floor's cycles per
// exit.
func (b *floorBench) perExit(kind string, reps int) (float64, error) {
	r := benchreport.FloorRow{Count: uint64(b.count)}
	for range reps {
		c, err := b.floor(kind)
		if err != nil {
			return 0, err
		}
		r.Floor = append(r.Floor, c)
	}
	return r.FloorPerExit(), nil
}

// cmdBenchExits is 'govmm bench-exits': the cost of one exit under govmm
// as a ratio to the minimal C VMM's, for a port read, an MMIO read and an
// x2APIC MSR write.
func cmdBenchExits(args []string, stdout, stderr io.Writer) (int, error) {
	b, out, err := parseBenchExitsFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	tab := &benchreport.FloorTable{}
	for _, k := range floorKinds {
		tab.Rows = append(tab.Rows, benchreport.FloorRow{Kind: k.name, Cause: k.cause.String(), Count: uint64(b.count)})
	}
	for rep := range b.reps {
		for i, k := range floorKinds {
			c, err := b.floor(k.name)
			if err != nil {
				return 0, err
			}
			tab.Rows[i].Floor = append(tab.Rows[i].Floor, c)
		}
		cycles, exits, err := b.govmm()
		if err != nil {
			return 0, err
		}
		for i := range floorKinds {
			tab.Rows[i].Govmm = append(tab.Rows[i].Govmm, cycles[i])
			tab.Rows[i].GovmmExits = append(tab.Rows[i].GovmmExits, exits[i])
		}
		fmt.Fprintf(b.progress, "[%d/%d] floor %d/%d/%d, govmm %d/%d/%d cycles (port/mmio/msr, %d exits each)\n", rep+1, b.reps,
			tab.Rows[0].Floor[rep], tab.Rows[1].Floor[rep], tab.Rows[2].Floor[rep], cycles[0], cycles[1], cycles[2], b.count)
	}
	tab.Note = fmt.Sprintf("Produced by `govmm bench-exits --count %d --reps %d` (%s, %v).\n\n%s", b.count, b.reps,
		time.Now().UTC().Format("2006-01-02"), time.Since(start).Round(time.Second), floorBenchNote)
	return 0, writeBenchTable(out, tab, stdout)
}

func parseBenchExitsFlags(args []string, stderr io.Writer) (*floorBench, string, error) {
	fs := benchFlagSet("bench-exits", stderr)
	count := fs.Int("count", 20000, "exits per loop")
	reps := fs.Int("reps", 5, "repetitions, alternating between the floor VMM and govmm")
	floorVMM := fs.String("floor", floorVMMPath(), "the minimal C VMM (bench/floor, built by 'make floorvmm')")
	blob := fs.String("blob", floorBlobPath(), "the floor loop for the C VMM ('make guests')")
	guest := fs.String("guest", filepath.Join(filepath.Dir(ipiGuestPath()), "floor.elf"), "the floor loop's govmm guest ('make guests')")
	kvmPath := fs.String("kvm", "/dev/kvm", "the KVM device, for both VMMs")
	out := fs.String("out", "govmm-bench-exits", "directory for report.md and report.csv")
	timeout := fs.Duration("timeout", 5*time.Minute, "limit per run")
	kvmRun := addKVMRunFlag(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return nil, "", err
	}
	run, err := kvmRun()
	if err != nil {
		return nil, "", err
	}
	if *count < 1 || *reps < 1 {
		return nil, "", fmt.Errorf("--count and --reps must be at least 1")
	}
	b, err := newFloorBench(*floorVMM, *blob, *kvmPath, *count)
	if err != nil {
		return nil, "", err
	}
	b.reps, b.guest, b.timeout, b.progress, b.kvmRun = *reps, *guest, *timeout, stderr, run
	if b.guestImage, err = os.ReadFile(b.guest); err != nil {
		return nil, "", fmt.Errorf("cannot read the floor guest (run 'make guests'): %w", err)
	}
	return b, *out, nil
}

var reFloorVMM = regexp.MustCompile(`^floor kind=(\w+) count=(\d+) cycles=(\d+) exits=(\d+)`)

// floor runs the C VMM once for kind and returns its loop's cycles.
func (b *floorBench) floor(kind string) (uint64, error) {
	cmd := exec.Command(b.floorVMM, "-k", b.kvmPath, b.blob, kind, strconv.Itoa(b.count))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, fmt.Errorf("floor VMM, %s: %s", kind, strings.TrimSpace(stderr.String()))
		}
		return 0, fmt.Errorf("floor VMM: %w", err)
	}
	m := reFloorVMM.FindStringSubmatch(string(out))
	if m == nil || m[1] != kind {
		return 0, fmt.Errorf("floor VMM, %s: unexpected output %q", kind, out)
	}
	if exits, _ := strconv.Atoi(m[4]); exits != b.count {
		return 0, fmt.Errorf("floor VMM, %s: %d exits for a loop of %d", kind, exits, b.count)
	}
	c, _ := strconv.ParseUint(m[3], 10, 64)
	return c, nil
}

var reFloorGuest = regexp.MustCompile(`# floor kind=(\w+) rep=\d+ count=(\d+) cycles=0x([0-9a-f]+)`)

// govmm runs floor.elf once (one loop of each kind) and returns each
// loop's cycles and govmm's count of its exits of the expected cause,
// having checked that the loop's section held nothing else.
func (b *floorBench) govmm() (cycles, exits []uint64, err error) {
	con := &vmm.ConsoleLog{}
	vm, err := vmm.New(vmm.Config{CPUs: 1, Kernel: b.guestImage, Cmdline: fmt.Sprintf("count=%d reps=1", b.count),
		Console: con, KVMPath: b.kvmPath, KVMRun: b.kvmRun})
	if err != nil {
		return nil, nil, err
	}
	defer vm.Close()
	res := vm.Run(b.timeout)
	log := con.String()
	if res.Err != nil || res.Status != 1 || !strings.Contains(log, "PASS floor") {
		return nil, nil, fmt.Errorf("floor.elf did not pass (status %d, %s, %v); its console:\n%s", res.Status, res.How, res.Err, log)
	}
	lines := reFloorGuest.FindAllStringSubmatch(log, -1)
	secs := vm.Accounting().Sections()
	if len(lines) != len(floorKinds) || len(secs) != len(floorKinds) {
		return nil, nil, fmt.Errorf("floor.elf printed %d loops and govmm recorded %d sections, want %d each", len(lines), len(secs), len(floorKinds))
	}
	for i, k := range floorKinds {
		if lines[i][1] != k.name {
			return nil, nil, fmt.Errorf("floor.elf loop %d is %s, want %s", i, lines[i][1], k.name)
		}
		c, _ := strconv.ParseUint(lines[i][3], 16, 64)
		s := secs[i].CPUs[0]
		if n := s.Exits[k.cause]; n != uint64(b.count) || s.Total() != n {
			return nil, nil, fmt.Errorf("%s loop of %d: govmm counted %d %s exits of %d", k.name, b.count, n, k.cause, s.Total())
		}
		cycles, exits = append(cycles, c), append(exits, s.Exits[k.cause])
	}
	return cycles, exits, nil
}
