package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// cacheDir is where the Makefile puts what it builds (guest kernel,
// initramfs, bare-metal guests).
func cacheDir() string {
	if d := os.Getenv("GOVMM_CACHE"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "govmm")
	}
	return ".cache"
}

// cmdBoot is 'govmm boot': boot Linux on govmm's own APICs in one APIC mode
// and report the boot phases, the mode the kernel chose and the exits.
func cmdBoot(args []string, stdout, stderr io.Writer) (int, error) {
	o, err := parseBootFlags(args, stderr)
	if err != nil {
		return 0, err
	}
	b, err := o.prepare(stdout)
	if err != nil {
		return 0, err
	}
	defer b.close()
	vm, err := vmm.New(b.cfg)
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	jf, err := createJSONReport(*o.jsonOut)
	if err != nil {
		return 0, err
	}
	defer jf.Close()
	res, err := runVM(vm, b.con, dashboard.Info{Mode: b.mode.Name, Kernel: b.kpath}, o.vmFlags, b.in, o.timeout, stderr)
	if err != nil {
		return 0, err
	}
	st := linuxguest.ParseLog(b.con.Log())
	if err := o.report(stdout, vm, b, res, st, jf); err != nil {
		return 0, err
	}
	return 0, o.verdict(stdout, vm, b.mode, res, st)
}

// bootOptions is what 'govmm boot' was asked for.
type bootOptions struct {
	cpus                                                 int
	mem, mode, kernel, initrd, appendArgs, console, exec string
	timeout                                              time.Duration
	quiet, decomp                                        bool
	pvf                                                  pvFlags
	vmFlags
}

// bootUsage is boot's -h header: what its defaults are for, against run's.
const bootUsage = `usage: govmm boot [flags]

boot's defaults suit a Linux boot, where run's suit the bare-metal test
kernels: 2 vCPUs (an SMP boot, so the APIC mode is exercised), 512M,
govmm's PV send-IPI off (Linux's own IPI path in the chosen mode is what
boot verifies; --pv-ipi tells govmm's kernel to use it), a 30m limit (a
boot that hangs ends), and --quiet hides the guest's console (the report
is printed either way). Kernel arguments go in --append.

flags:`

// parseBootFlags reads boot's command line and checks every value and
// file it names that can be checked before the kernel is read.
func parseBootFlags(args []string, stderr io.Writer) (*bootOptions, error) {
	fs := newFlagSet("boot", bootUsage, consoleHelp, stderr)
	o := &bootOptions{}
	fs.IntVar(&o.cpus, "cpus", 2, "number of vCPUs")
	fs.StringVar(&o.mem, "mem", "512M", "guest RAM, 2M to 1T (K, M, G, T suffixes; none: bytes)")
	mode := addX2APICFlag(fs, "cluster", "APIC mode Linux is told to use: off (xAPIC), physical, cluster (with interrupt remapping) or mixed (govmm's kernel; with interrupt remapping)")
	fs.StringVar(&o.kernel, "kernel", "", "kernel: bzImage or vmlinux (default: govmm's guest kernel from the cache)")
	fs.StringVar(&o.initrd, "initrd", "", "initramfs (default: govmm's u-root initramfs from the cache, if built)")
	fs.StringVar(&o.appendArgs, "append", "", "extra kernel command-line arguments")
	fs.StringVar(&o.console, "console", "auto", "the guest's console once its driver is up: serial (ttyS0), virtio (hvc0, the virtio console) or auto (virtio for govmm's kernel, serial for others); early messages are always on the serial port")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "stop the guest after this long (0: never)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not echo the guest console (the report is printed either way)")
	o.pvf = addPVFlags(fs)
	o.vmFlags = addVMFlags(fs)
	fs.StringVar(&o.exec, "exec", "", "type these shell commands at the guest's u-root shell once it prompts, then poweroff (replaces console input)")
	fs.BoolVar(&o.decomp, "decompressor", false, "run a bzImage's own decompressor instead of entering its payload directly")
	pos, rest, err := parseArgs(fs, args, "")
	if err != nil {
		return nil, err
	}
	o.mode = mode.String()
	if pos = append(pos, rest...); len(pos) > 0 {
		return nil, usageErr("boot", "takes no arguments (got %q); kernel arguments go in --append", pos[0])
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	return o, nil
}

// bootSetup is a boot ready to run: the VM's configuration, the APIC mode
// it is for, the console watching the guest and the console input.
type bootSetup struct {
	cfg    vmm.Config
	mode   linuxguest.Mode
	kpath  string
	con    *linuxguest.Console
	in     *consoleInput
	script *linuxguest.ConsoleScript // --exec; nil without
}

// close ends the --exec script, if any (when the VM has ended).
func (b *bootSetup) close() {
	if b.script != nil {
		b.script.Close()
	}
}

// prepare builds the boot: the console input, the mode's VM configuration
// with the kernel and initramfs, the console echoing to stdout, and the
// --exec script.
func (o *bootOptions) prepare(stdout io.Writer) (*bootSetup, error) {
	b := &bootSetup{in: &consoleInput{}}
	if o.exec == "" {
		var err error
		if b.in, err = o.conIn.open(os.Stdin); err != nil {
			return nil, err
		}
	}
	symbols, err := o.dash.symbols()
	if err != nil {
		return nil, err
	}
	if b.cfg, b.mode, b.kpath, err = o.vmConfig(); err != nil {
		return nil, err
	}
	b.cfg.Symbols = symbols
	var out io.Writer = stdout
	if o.quiet {
		out = nil
	}
	b.con = linuxguest.NewConsole(out, linuxguest.BootMilestones)
	b.cfg.Console, b.cfg.RunDecompressor = b.con, o.decomp
	if o.exec != "" {
		b.script, err = linuxguest.NewConsoleScript(b.con,
			linuxguest.ScriptStep{Send: o.exec + "\n"}, linuxguest.ScriptStep{Wait: `\n\$ `, Send: "poweroff\n"})
		if err != nil {
			return nil, err
		}
		b.in.r = b.script
	}
	b.cfg.ConsoleInput = b.in.r
	return b, nil
}

// vmConfig is the mode's VM configuration with the guest RAM, the PV and
// host flags, the disk, the kernel (and where it was read from) and the
// initramfs. Every value is checked and every file read (bootImages)
// before the host is probed (linuxguest.VMConfig asks whether it
// interprets guest kernel code) and long before /dev/kvm is opened.
func (o *bootOptions) vmConfig() (vmm.Config, linuxguest.Mode, string, error) {
	img, err := o.images()
	if err != nil {
		return vmm.Config{}, linuxguest.Mode{}, img.kpath, err
	}
	cfg, m, err := linuxguest.VMConfig(o.mode, o.cpus, o.kernel == "", o.pvf.config().PVIPI, o.appendArgs)
	if err == nil {
		err = linuxguest.SetConsole(&cfg, o.console)
	}
	if err == nil {
		err = o.hostFlags(&cfg)
	}
	if err != nil {
		return cfg, m, img.kpath, err
	}
	cfg.MemSize, cfg.Kernel, cfg.Initrd, cfg.KVMPath, cfg.Disk = img.mem, img.kernel, img.initrd, *o.kvmPath, *o.disk
	o.pvf.apply(&cfg)
	return cfg, m, img.kpath, nil
}

// bootImages are a boot's checked values and files: the guest RAM, the
// kernel (and where it was read from) and the initramfs.
type bootImages struct {
	mem            uint64
	kpath          string
	kernel, initrd []byte
}

// images checks boot's values without the host (the mode, --mem,
// --console, the host flags and vmm.Config.Validate) and reads the kernel
// and the initramfs.
func (o *bootOptions) images() (bootImages, error) {
	var img bootImages
	m, err := linuxguest.CheckMode(o.mode, o.cpus, o.kernel == "")
	if err == nil {
		img.mem, err = parseMem(o.mem)
	}
	if err == nil {
		err = linuxguest.SetConsole(&vmm.Config{}, o.console)
	}
	pre := vmm.Config{CPUs: o.cpus, MemSize: img.mem, Disk: *o.disk, X2APIC: pick(m.X2APIC, vmm.X2APICOn, vmm.X2APICOff)}
	o.pvf.applyTo(&pre, nil) // --lapic=kvm refuses some of them: before the host is probed
	if err == nil {
		err = o.hostFlags(&pre)
	}
	if err == nil {
		err = pre.Validate()
	}
	if err != nil {
		return img, err
	}
	if img.kpath = o.kernel; img.kpath == "" {
		img.kpath = filepath.Join(cacheDir(), "linux", "vmlinux")
		if _, err := os.Stat(img.kpath); err != nil {
			return img, fmt.Errorf("govmm's guest kernel is not built (%v): run 'make kernel' or pass --kernel", err)
		}
	}
	if img.kernel, err = readKernel(img.kpath); err != nil {
		return img, err
	}
	ipath := o.initrd
	if ipath == "" {
		ipath = filepath.Join(cacheDir(), "initramfs.cpio")
	}
	if img.initrd, err = os.ReadFile(ipath); err != nil && o.initrd != "" {
		return img, fmt.Errorf("cannot read initramfs: %w", err)
	}
	return img, nil
}

// report prints how the boot went: the phases, the SYSCALL doorbell and
// XSAVE traffic, the host answers used, what the kernel log says, the
// accounting table (and its JSON, --json).
func (o *bootOptions) report(stdout io.Writer, vm *vmm.VM, b *bootSetup, res vmm.Result, st linuxguest.State, jf *os.File) error {
	report := vm.Accounting().Report()
	fmt.Fprintf(stdout, "\ngovmm boot: --x2apic=%s, %d vCPUs, %s delivery, guest ran %v, ended by %s\n", o.mode, o.cpus,
		b.cfg.Delivery(), res.Duration.Round(time.Millisecond), res.How)
	writePhases(stdout, b.con.Reached())
	writeSyscalls(stdout, vm, b.con.Reached())
	writeXState(stdout, vm)
	writeHostUsed(stdout, vm)
	fmt.Fprintf(stdout, "kernel log: APIC mode %q, x2APIC %v, IRQ remapping %q, PV send-IPI %s, %d CPUs up, /init %v\n",
		st.APICMode, st.X2APIC, orNone(st.IRQRemap), pvIPIUsed(st), st.CPUsUp, st.InitRun)
	report.WriteTable(stdout)
	return writeJSONReport(jf, vm, report)
}

// verdict is boot's outcome: the guest ended by the user is a success
// (what was not verified said on stdout); otherwise the kernel's log must
// match the mode, and an error of the run fails it, except that on an
// emulating host without the SYSCALL doorbell reaching /init is all that
// can be verified.
func (o *bootOptions) verdict(stdout io.Writer, vm *vmm.VM, m linuxguest.Mode, res vmm.Result, st linuxguest.State) error {
	pvIPI := linuxguest.WantPVIPI(o.pvf.config(), o.kernel == "")
	if user, err := stoppedBy(res.How); user || err != nil {
		// Ctrl-A x is a success whatever the guest reached; say what was not verified.
		if user {
			if err := st.Verify(m, o.cpus, pvIPI); err != nil {
				fmt.Fprintf(stdout, "govmm boot: not verified (ended by user): %v\n", err)
			}
		}
		return err
	}
	if !st.InitRun && res.Err != nil {
		return fmt.Errorf("the guest did not reach /init: %w", res.Err)
	}
	if err := st.Verify(m, o.cpus, pvIPI); err != nil {
		return err
	}
	if vmm.HostEmulates() && !vm.SyscallDoorbell() && res.How != "poweroff" {
		// What follows /init is user space, which cannot run here.
		fmt.Fprintln(os.Stderr, "govmm: the guest reached /init; on this host KVM interprets guest kernel code and SYSCALL from guest user space is broken, so user space cannot run without --syscall-doorbell (docs/hosts.md): boot verified up to /init")
		return nil
	}
	return res.Err
}

// jsonReport is what --json writes: the accounting and the exit bus map
// of the VM that was counted (every range its exits were dispatched by).
type jsonReport struct {
	accounting.Report
	BusMap []exitbus.Entry `json:"bus_map"`
}

// createJSONReport creates the --json file (nil for none) before the
// guest runs: the sandbox allows no file to be opened once it does.
func createJSONReport(path string) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--json: %w", err)
	}
	return f, nil
}

// writeJSONReport writes vm's accounting and bus map as JSON to f (the
// --json file), if there is one.
func writeJSONReport(f *os.File, vm *vmm.VM, report accounting.Report) error {
	if f == nil {
		return nil
	}
	e := json.NewEncoder(f)
	e.SetIndent("", "  ")
	return e.Encode(jsonReport{report, vm.Map()})
}

// writeSyscalls reports the SYSCALL doorbell's traffic from /init to the
// shell's prompt (user space starting up, nobody typing), when govmm
// offered it.
func writeSyscalls(w io.Writer, vm *vmm.VM, ph []linuxguest.PhaseRecord) {
	if !vm.SyscallDoorbell() {
		return
	}
	byCause := vm.Accounting().Report().Total.ByCause
	n := byCause[exitcause.SyscallDoorbell.String()]
	if f := byCause[exitcause.SyscallDoorbellForged.String()]; f > 0 {
		fmt.Fprintf(w, "SYSCALL doorbell: %d accesses that were not a SYSCALL refused (syscall_doorbell_forged: #GP(0) from user mode)\n", f)
	}
	d, k, ok := linuxguest.UserStartup(ph)
	if !ok {
		fmt.Fprintf(w, "SYSCALL doorbell: %d guest SYSCALLs completed by govmm\n", n)
		return
	}
	fmt.Fprintf(w, "SYSCALL doorbell: %d guest SYSCALLs completed by govmm; /init to shell prompt: %d in %v (%.0f/s)\n",
		n, k, d.Round(time.Millisecond), float64(k)/d.Seconds())
}

// writeXState reports the XSAVE-family instructions govmm completed for
// the guest kernel (complete/xsave.go), when there were any: each is one exit.
func writeXState(w io.Writer, vm *vmm.VM) {
	t := vm.Accounting().Report().Total
	var n uint64
	counts := make([]uint64, len(xstateCauses))
	for i, c := range xstateCauses {
		counts[i] = t.ByCause[c.String()]
		n += counts[i]
	}
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "XSAVE family completed by govmm: %d saves, %d restores, %d XGETBV, %d XSETBV, %d raised an exception: %d exits, %.1f%% of %d\n",
		counts[0], counts[1], counts[2], counts[3], counts[4], n, 100*float64(n)/float64(max(t.Exits, 1)), t.Exits)
}

// writeHostUsed says which of the host probe's answers (govmm host) this
// boot was configured with.
func writeHostUsed(w io.Writer, vm *vmm.VM) {
	a, err := vmm.Host()
	if err != nil {
		fmt.Fprintf(w, "host: not probed (%v)\n", err)
		return
	}
	fmt.Fprintf(w, "host (measured): guest kernel code %s, TSC_DEADLINE writes %s: TSC-deadline mode %s, SYSCALL doorbell %s\n",
		pick(a.Emulates, "interpreted", "run by VT-x/AMD-V"), pick(a.TSCDeadlineReaches, "reach govmm", "dropped by KVM"),
		pick(vm.TSCDeadline(), "advertised", "not advertised"), pick(vm.SyscallDoorbell(), "on", "off"))
}

func pick[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

var xstateCauses = []exitcause.Cause{exitcause.RecoverXSAVE, exitcause.RecoverXRSTOR,
	exitcause.RecoverXGETBV, exitcause.RecoverXSETBV, exitcause.RecoverXStateFault}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// writePhases prints each milestone with its time and the exits of the
// phase that ended there.
func writePhases(w io.Writer, ph []linuxguest.PhaseRecord) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tat\texits in phase\tline")
	var prev uint64
	for _, p := range ph {
		line := p.Line
		if len(line) > 70 {
			line = line[:70] + "..."
		}
		fmt.Fprintf(tw, "%s\t%v\t%d\t%s\n", p.Name, p.At.Round(time.Millisecond), p.Exits-prev, line)
		prev = p.Exits
	}
	tw.Flush()
}

// pvIPIUsed names the PV send-IPI the kernel switched to, if any.
func pvIPIUsed(st linuxguest.State) string {
	switch {
	case st.PVIPI:
		return "govmm's"
	case st.KVMPVIPI:
		return "KVM's"
	}
	return "none"
}
