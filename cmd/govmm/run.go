package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/loader"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/vmm"
)

// cmdRun is 'govmm run': boot a Multiboot kernel, wait for it to end, print
// the accounting. The exit code is the guest's debug-exit status.
func cmdRun(args []string, stdout, stderr io.Writer) (int, error) {
	o, err := parseRunFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	cfg, in, err := o.vmConfig(stdout)
	if err != nil {
		return 0, err
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	jf, err := createJSONReport(*o.jsonOut)
	if err != nil {
		return 0, err
	}
	defer jf.Close()
	res, err := runVM(vm, nil, dashboard.Info{Mode: "bare-metal", Kernel: o.kernelPath}, o.vmFlags, in, o.timeout, stderr)
	if err != nil {
		return 0, err
	}
	if err := o.report(stdout, vm, res, jf); err != nil {
		return 0, err
	}
	return guestStatus(res, stderr)
}

// guestStatus is run's and restore's exit: the guest's debug-exit status,
// 0 when the user ended it, or the run's error.
func guestStatus(res vmm.Result, stderr io.Writer) (int, error) {
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

// runOptions is what 'govmm run' was asked for.
type runOptions struct {
	cpus          int
	mem           string
	iommu         bool
	x2apic        *x2apicFlag
	pvf           pvFlags
	quiet         bool
	virtioConsole bool
	timeout       time.Duration
	vmFlags
	mods       moduleFlag
	kernelPath string   // the KERNEL argument
	guestArgs  []string // the ARGS after it
}

// runUsage is run's -h header: what its defaults are for, against boot's.
const runUsage = `usage: govmm run [flags] KERNEL [ARGS...] [-- ARGS...]

govmm's flags go anywhere before '--'; ARGS are the guest's (its Multiboot
command line), and one that looks like a flag goes after '--'. run's
defaults suit the bare-metal test kernels (1 vCPU, 128M, govmm's PV
send-IPI advertised, no time limit, --quiet hides the accounting); boot's
suit a Linux boot (see 'govmm boot --help').

flags:`

// parseRunFlags reads run's command line and checks every value and file
// it names that can be checked before the kernel is read.
func parseRunFlags(args []string, stderr io.Writer) (*runOptions, error) {
	fs := newFlagSet("run", runUsage, consoleHelp, stderr)
	o := &runOptions{}
	fs.IntVar(&o.cpus, "cpus", 1, "number of vCPUs")
	fs.StringVar(&o.mem, "mem", "128M", "guest RAM, 2M to 1T (K, M, G, T suffixes; none: bytes)")
	o.x2apic = addX2APICFlag(fs, "cluster", "APIC mode: off (xAPIC only: x2APIC hidden from CPUID), physical, cluster or mixed (x2APIC advertised: a bare-metal guest picks its mode itself)")
	fs.BoolVar(&o.iommu, "iommu", true, "add the VT-d interrupt-remapping unit at 0xFED90000")
	o.pvf = addPVFlags(fs, pvipi.Flag)
	fs.DurationVar(&o.timeout, "timeout", 0, "stop the guest after this long (0: never)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not print the accounting table (the guest's console is printed either way)")
	fs.BoolVar(&o.virtioConsole, "virtio-console", false, "add a virtio console on the PCI bus: its output goes where COM1's does, and console input goes to it instead of COM1")
	o.vmFlags = addVMFlags(fs)
	fs.Var(&o.mods, "module", "load FILE[=STRING] as a Multiboot module (repeatable)")
	pos, rest, err := parseArgs(fs, args, "KERNEL -- ARGS")
	if err != nil {
		return nil, err
	}
	if len(pos) < 1 {
		return nil, usageErr("run", "needs a KERNEL image")
	}
	o.kernelPath, o.guestArgs = pos[0], append(pos[1:], rest...)
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// vmConfig builds the VM's configuration, the console input with it:
// every value is checked (vmm.Config.Validate) and the kernel read and
// recognised before /dev/kvm is opened or the host probed.
func (o *runOptions) vmConfig(stdout io.Writer) (vmm.Config, *consoleInput, error) {
	size, err := parseMem(o.mem)
	if err != nil {
		return vmm.Config{}, nil, err
	}
	cfg := vmm.Config{CPUs: o.cpus, MemSize: size, Modules: o.mods.mods,
		Cmdline: strings.Join(o.guestArgs, " "), Console: stdout, KVMPath: *o.kvmPath, KernelPath: o.kernelPath, IOMMU: o.iommu}
	o.pvf.apply(&cfg)
	cfg.Disk = *o.disk
	cfg.VirtioConsole = o.virtioConsole
	if !o.x2apic.advertised() {
		cfg.X2APIC = vmm.X2APICOff
	}
	if err = o.hostFlags(&cfg); err != nil {
		return vmm.Config{}, nil, err
	}
	if err = cfg.Validate(); err != nil {
		return vmm.Config{}, nil, err
	}
	if cfg.Symbols, err = o.dash.symbols(); err != nil {
		return vmm.Config{}, nil, err
	}
	if cfg.Kernel, err = readKernel(o.kernelPath); err != nil {
		return vmm.Config{}, nil, err
	}
	in, err := o.conIn.open(os.Stdin)
	if err != nil {
		return vmm.Config{}, nil, err
	}
	cfg.ConsoleInput = in.r
	return cfg, in, nil
}

// report prints the run time, the host answers used and the accounting
// table (unless --quiet), with KVM's own exit statistics; and writes the
// JSON (--json).
func (o *runOptions) report(stdout io.Writer, vm *vmm.VM, res vmm.Result, jf *os.File) error {
	report := vm.Accounting().Report()
	if stats, err := vm.KVMStats(); err == nil {
		report.KVMStats = exitStats(stats)
	}
	if !o.quiet {
		fmt.Fprintf(stdout, "\ngovmm: guest ran %v\n", res.Duration.Round(time.Millisecond))
		writeHostUsed(stdout, vm)
		report.WriteTable(stdout)
	}
	return writeJSONReport(jf, vm, report)
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

// parseSize reads 128M, 1G, 1T, 65536 (bytes), 512K.
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	t := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "i"))
	if i := strings.IndexAny(t, "KMGT"); i >= 0 && i == len(t)-1 {
		mult, t = 1<<(10*(1+strings.IndexByte("KMGT", t[i]))), t[:i]
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || n == 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("bad memory size %q (want e.g. 128M or 2G)", s)
	}
	return n * mult, nil
}

// parseMem reads a guest's --mem: a size govmm can give a guest
// (memory.CheckSize), said in the flag's own units.
func parseMem(s string) (uint64, error) {
	n, err := parseSize(s)
	if err == nil {
		err = memory.CheckSize(n)
	}
	if err != nil {
		return 0, fmt.Errorf("--mem %s: want 2M to 1T, a multiple of 4K (K, M, G, T suffixes; a bare number is bytes)", s)
	}
	return n, nil
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
