package main

import (
	"flag"
	"fmt"
	"github.com/govmm/govmm/accounting"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/govmm/govmm/dashboard"
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
	fs := flag.NewFlagSet("boot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpus := fs.Int("cpus", 2, "number of vCPUs")
	mem := fs.String("mem", "512M", "guest RAM")
	mode := fs.String("x2apic", "cluster", "APIC mode: off (xAPIC), physical, cluster (with interrupt remapping) or mixed")
	kernel := fs.String("kernel", "", "kernel: bzImage or vmlinux (default: govmm's guest kernel from the cache)")
	initrd := fs.String("initrd", "", "initramfs (default: govmm's u-root initramfs from the cache, if built)")
	appendArgs := fs.String("append", "", "extra kernel command-line arguments")
	timeout := fs.Duration("timeout", 30*time.Minute, "stop the guest after this long (0: never)")
	jsonOut := fs.String("json", "", "also write the accounting as JSON to this file")
	quiet := fs.Bool("quiet", false, "do not echo the guest console")
	pv := fs.Bool("pv-ipi", false, "advertise govmm's paravirtual send-IPI; govmm's kernel then sends all its IPIs through it")
	pveoi := fs.Bool("pv-eoi", false, "advertise KVM's PV EOI, served by govmm: Linux's edge EOIs cost no exit")
	avic := fs.Bool("avic", false, "AVIC-style delivery: edge IPIs posted to the target's IRR backing page without its lock (implies --pv-eoi)")
	dash := addDashFlags(fs)
	hostFlags := addHostFlags(fs)
	conIn := addConsoleFlag(fs)
	execCmds := fs.String("exec", "", "type these shell commands at the guest's u-root shell once it prompts, then poweroff (replaces console input)")
	decomp := fs.Bool("decompressor", false, "run a bzImage's own decompressor instead of entering its payload directly")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: govmm boot [flags]")
		fs.PrintDefaults()
		fmt.Fprint(stderr, consoleHelp)
	}
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("boot takes no arguments (got %q); kernel arguments go in --append", fs.Arg(0))
	}
	in := &consoleInput{}
	if *execCmds == "" {
		var err error
		if in, err = conIn.open(os.Stdin); err != nil {
			return 0, err
		}
	}
	cfg, m, err := linuxguest.VMConfig(*mode, *cpus, *kernel == "", *pv, *appendArgs)
	if err != nil {
		return 0, err
	}
	size, err := parseSize(*mem)
	if err != nil {
		return 0, err
	}
	kpath := *kernel
	if kpath == "" {
		kpath = filepath.Join(cacheDir(), "linux", "vmlinux")
	}
	img, err := os.ReadFile(kpath)
	if err != nil {
		if *kernel == "" {
			return 0, fmt.Errorf("govmm's guest kernel is not built (%v): run 'make kernel' or pass --kernel", err)
		}
		return 0, fmt.Errorf("cannot read kernel image: %w", err)
	}
	var rd []byte
	ipath := *initrd
	if ipath == "" {
		ipath = filepath.Join(cacheDir(), "initramfs.cpio")
	}
	if rd, err = os.ReadFile(ipath); err != nil && *initrd != "" {
		return 0, fmt.Errorf("cannot read initramfs: %w", err)
	}
	var out io.Writer = stdout
	if *quiet {
		out = nil
	}
	con := linuxguest.NewConsole(out, linuxguest.BootMilestones)
	cfg.MemSize, cfg.Kernel, cfg.Initrd, cfg.Console, cfg.RunDecompressor, cfg.PVEOI, cfg.AVIC = size, img, rd, con, *decomp, *pveoi, *avic
	if err = hostFlags(&cfg); err != nil {
		return 0, err
	}
	if cfg.Symbols, err = dash.symbols(); err != nil {
		return 0, err
	}
	if *execCmds != "" {
		script, err := linuxguest.NewConsoleScript(con,
			linuxguest.ScriptStep{Send: *execCmds + "\n"}, linuxguest.ScriptStep{Wait: `\n\$ `, Send: "poweroff\n"})
		if err != nil {
			return 0, err
		}
		defer script.Close()
		in.r = script
	}
	cfg.ConsoleInput = in.r
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", kpath, err)
	}
	defer vm.Close()
	res, err := runVM(vm, con, dashboard.Info{Mode: m.Name, Kernel: kpath}, dash, in, *timeout, stderr)
	if err != nil {
		return 0, err
	}
	report := vm.Accounting().Report()
	st := linuxguest.ParseLog(con.Log())

	fmt.Fprintf(stdout, "\ngovmm boot: --x2apic=%s, %d vCPUs, %s delivery, guest ran %v, ended by %s\n", *mode, *cpus,
		cfg.Delivery(), res.Duration.Round(time.Millisecond), res.How)
	writePhases(stdout, con.Reached())
	writeSyscalls(stdout, vm, con.Reached())
	writeXState(stdout, vm)
	writeHostUsed(stdout, vm)
	fmt.Fprintf(stdout, "kernel log: APIC mode %q, x2APIC %v, IRQ remapping %q, PV send-IPI %v, %d CPUs up, /init %v\n",
		st.APICMode, st.X2APIC, orNone(st.IRQRemap), st.PVIPI, st.CPUsUp, st.InitRun)
	report.WriteTable(stdout)
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
	if user, err := stoppedBy(res.How); user || err != nil {
		// Ctrl-A x is a success whatever the guest reached; say what was not verified.
		if user {
			if err := st.Verify(m, *cpus, *pv && *kernel == ""); err != nil {
				fmt.Fprintf(stdout, "govmm boot: not verified (ended by user): %v\n", err)
			}
		}
		return 0, err
	}
	if !st.InitRun && res.Err != nil {
		return 0, fmt.Errorf("the guest did not reach /init: %w", res.Err)
	}
	if err := st.Verify(m, *cpus, *pv && *kernel == ""); err != nil {
		return 0, err
	}
	if vmm.HostEmulates() && !vm.SyscallDoorbell() && res.How != "poweroff" {
		// What follows /init is user space, which cannot run here.
		fmt.Fprintln(os.Stderr, "govmm: the guest reached /init; on this host KVM interprets guest kernel code and SYSCALL from guest user space is broken, so user space cannot run without --syscall-doorbell (docs/hosts.md): boot verified up to /init")
		return 0, nil
	}
	if res.Err != nil {
		return 0, res.Err
	}
	return 0, nil
}

// writeSyscalls reports the SYSCALL doorbell's traffic from /init to the
// shell's prompt (user space starting up, nobody typing), when govmm
// offered it.
func writeSyscalls(w io.Writer, vm *vmm.VM, ph []linuxguest.PhaseRecord) {
	if !vm.SyscallDoorbell() {
		return
	}
	byCause := vm.Accounting().Report().Total.ByCause
	n := byCause[accounting.CauseSyscallDoorbell.String()]
	if f := byCause[accounting.CauseSyscallDoorbellForged.String()]; f > 0 {
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
// the guest kernel (vcpu/xsave.go), when there were any: each is one exit.
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

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

var xstateCauses = []accounting.Cause{accounting.CauseRecoverXSAVE, accounting.CauseRecoverXRSTOR,
	accounting.CauseRecoverXGETBV, accounting.CauseRecoverXSETBV, accounting.CauseRecoverXStateFault}

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
