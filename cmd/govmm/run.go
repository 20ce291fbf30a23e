package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/loader"
	"github.com/govmm/govmm/vmm"
)

// cmdRun is 'govmm run': boot a Multiboot kernel, wait for it to end, print
// the accounting. The exit code is the guest's debug-exit status.
func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpus := fs.Int("cpus", 1, "number of vCPUs")
	mem := fs.String("mem", "128M", "guest RAM (K, M, G suffixes)")
	x2 := fs.Bool("x2apic", true, "advertise x2APIC in CPUID")
	nox2 := fs.Bool("no-x2apic", false, "do not advertise x2APIC (xAPIC only)")
	iommu := fs.Bool("iommu", true, "add the VT-d interrupt-remapping unit at 0xFED90000")
	pv := fs.Bool("pv-ipi", true, "advertise govmm's paravirtual send-IPI (one exit per multicast)")
	pveoi := fs.Bool("pv-eoi", false, "advertise KVM's PV EOI, served by govmm (edge EOIs without exits)")
	avic := fs.Bool("avic", false, "AVIC-style delivery: edge IPIs posted to the target's IRR backing page without its lock (implies --pv-eoi)")
	jsonOut := fs.String("json", "", "also write the accounting as JSON to this file")
	timeout := fs.Duration("timeout", 0, "stop the guest after this long (0: never)")
	quiet := fs.Bool("quiet", false, "do not print the accounting table")
	kvmPath := fs.String("kvm", "/dev/kvm", "KVM device")
	dash := addDashFlags(fs)
	hostFlags := addHostFlags(fs)
	conIn := addConsoleFlag(fs)
	var mods moduleFlag
	fs.Var(&mods, "module", "load FILE[=STRING] as a Multiboot module (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: govmm run [flags] KERNEL [ARGS...]")
		fs.PrintDefaults()
		fmt.Fprint(stderr, consoleHelp)
	}
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 0, errors.New("run needs a KERNEL image")
	}
	size, err := parseSize(*mem)
	if err != nil {
		return 0, err
	}
	in, err := conIn.open(os.Stdin)
	if err != nil {
		return 0, err
	}
	kernelPath := fs.Arg(0)
	kernel, err := os.ReadFile(kernelPath)
	if err != nil {
		return 0, fmt.Errorf("cannot read kernel image: %w", err)
	}
	cfg := vmm.Config{CPUs: *cpus, MemSize: size, Kernel: kernel, Modules: mods.mods,
		Cmdline: strings.Join(fs.Args()[1:], " "), Console: stdout, KVMPath: *kvmPath, KernelPath: kernelPath, IOMMU: *iommu, PVIPI: *pv, PVEOI: *pveoi,
		AVIC: *avic, ConsoleInput: in.r}
	if *nox2 || !*x2 {
		cfg.X2APIC = vmm.X2APICOff
	}
	if err = hostFlags(&cfg); err != nil {
		return 0, err
	}
	if cfg.Symbols, err = dash.symbols(); err != nil {
		return 0, err
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", kernelPath, err)
	}
	defer vm.Close()
	res, err := runVM(vm, nil, dashboard.Info{Mode: "bare-metal", Kernel: kernelPath}, dash, in, *timeout, stderr)
	if err != nil {
		return 0, err
	}
	report := vm.Accounting().Report()
	if stats, err := vm.KVMStats(); err == nil {
		report.KVMStats = exitStats(stats)
	}
	if !*quiet {
		fmt.Fprintf(stdout, "\ngovmm: guest ran %v\n", res.Duration.Round(time.Millisecond))
		writeHostUsed(stdout, vm)
		report.WriteTable(stdout)
	}
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		if err := report.WriteJSON(f); err != nil {
			return 0, err
		}
	}
	if user, err := stoppedBy(res.How); user {
		fmt.Fprintln(stderr, "govmm: ended by user (Ctrl-A x)")
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if res.Err != nil {
		return 0, res.Err
	}
	return res.Status, nil
}

// exitStats keeps KVM's statistics that count exits.
func exitStats(all map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range all {
		if strings.HasSuffix(k, "exits") || k == "halt_wakeup" {
			out[k] = v
		}
	}
	return out
}

// parseSize reads 128M, 1G, 65536, 512K.
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	t := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "i"))
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n == 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("bad memory size %q (want e.g. 128M or 2G)", s)
	}
	return n * mult, nil
}

type moduleFlag struct{ mods []loader.Module }

func (m *moduleFlag) String() string { return fmt.Sprint(len(m.mods), " modules") }

func (m *moduleFlag) Set(v string) error {
	path, str, _ := strings.Cut(v, "=")
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read module: %w", err)
	}
	if str == "" {
		str = path
	}
	m.mods = append(m.mods, loader.Module{Data: data, String: str})
	return nil
}
