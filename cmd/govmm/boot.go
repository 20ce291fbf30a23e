package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

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

// apicModes maps --x2apic to what the VM presents. Linux chooses its mode
// from that (REFERENCE.md); govmm then checks the kernel's log.
var apicModes = map[string]struct {
	x2apic, iommu bool
	cmdline       string
	want          string // the mode the kernel log must show
}{
	"off":      {false, false, "", "flat|physflat"},
	"physical": {true, false, "", "physical x2apic"},
	"cluster":  {true, true, "", "cluster x2apic"},
	"mixed":    {true, true, "govmm.apic=mixed", "mixed"},
}

// emulatingHostCmdline keeps a kernel away from what this kind of host's
// instruction emulator cannot run in kernel mode (HOST.md).
const emulatingHostCmdline = "noxsave clearcpuid=smap,smep,umip,pku,ssse3,popcnt,sse4_1,sse4_2,aes,pclmulqdq,movbe,bmi1,bmi2,rdrand,rdseed,sha_ni,adx cryptomgr.notests init_on_alloc=0"

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
	timeout := fs.Duration("timeout", 30*time.Minute, "stop the guest after this long")
	jsonOut := fs.String("json", "", "also write the accounting as JSON to this file")
	quiet := fs.Bool("quiet", false, "do not echo the guest console")
	decomp := fs.Bool("decompressor", false, "run a bzImage's own decompressor instead of entering its payload directly")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: govmm boot [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, fmt.Errorf("boot takes no arguments (got %q); kernel arguments go in --append", fs.Arg(0))
	}
	m, ok := apicModes[*mode]
	if !ok {
		return 0, fmt.Errorf("--x2apic=%s: want off, physical, cluster or mixed", *mode)
	}
	switch {
	case *mode == "off" && *cpus > 255:
		return 0, fmt.Errorf("--x2apic=off with %d vCPUs: xAPIC IDs stop at 254", *cpus)
	case *mode == "physical" && *cpus > 255:
		return 0, fmt.Errorf("--x2apic=physical with %d vCPUs: without interrupt remapping Linux reaches APIC IDs up to 255 only; use cluster or mixed", *cpus)
	case *mode == "mixed" && *kernel != "":
		return 0, errors.New("--x2apic=mixed needs govmm's guest kernel (its patch provides the mode): drop --kernel")
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
	cmdline := []string{"console=ttyS0", "earlyprintk=serial,ttyS0", "panic=-1", "nowatchdog", "reboot=acpi"}
	if vmm.HostEmulates() {
		cmdline = append(cmdline, emulatingHostCmdline)
	}
	cmdline = append(cmdline, m.cmdline, *appendArgs)
	var out io.Writer = stdout
	if *quiet {
		out = nil
	}
	con := vmm.NewConsole(out, vmm.LinuxMilestones)
	cfg := vmm.Config{CPUs: *cpus, MemSize: size, Kernel: img, Initrd: rd, Console: con, IOMMU: m.iommu, RunDecompressor: *decomp,
		Cmdline: strings.Join(strings.Fields(strings.Join(cmdline, " ")), " ")}
	if !m.x2apic {
		cfg.X2APIC = vmm.X2APICOff
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", kpath, err)
	}
	defer vm.Close()
	res := vm.Run(*timeout)
	report := vm.Accounting().Report()
	st := vmm.ParseLinuxLog(con.Log())

	fmt.Fprintf(stdout, "\ngovmm boot: --x2apic=%s, %d vCPUs, guest ran %v, ended by %s\n", *mode, *cpus,
		res.Duration.Round(time.Millisecond), res.How)
	writePhases(stdout, con.Reached())
	fmt.Fprintf(stdout, "kernel log: APIC mode %q, x2APIC %v, IRQ remapping %q, %d CPUs up, /init %v\n",
		st.APICMode, st.X2APIC, orNone(st.IRQRemap), st.CPUsUp, st.InitRun)
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
	return bootVerdict(*mode, m.want, *cpus, st, res)
}

// bootVerdict turns the boot into govmm's exit code and, on failure, its
// one-line error.
func bootVerdict(mode, want string, cpus int, st vmm.LinuxState, res vmm.Result) (int, error) {
	modeOK := false
	for _, w := range strings.Split(want, "|") {
		modeOK = modeOK || st.APICMode == w
	}
	switch {
	case !st.InitRun && res.Err != nil:
		return 0, fmt.Errorf("the guest did not reach /init: %w", res.Err)
	case !st.InitRun && st.Panic != "":
		return 0, fmt.Errorf("the guest kernel panicked before /init: %s", st.Panic)
	case !st.InitRun:
		return 0, fmt.Errorf("the guest ended (%s) before /init", res.How)
	case !modeOK:
		return 0, fmt.Errorf("--x2apic=%s: the kernel chose APIC mode %q, want %s", mode, st.APICMode, want)
	case st.CPUsUp != cpus:
		return 0, fmt.Errorf("only %d of %d CPUs came online", st.CPUsUp, cpus)
	}
	if vmm.HostEmulates() && res.How != "poweroff" {
		// What follows /init is user space, which cannot run here.
		fmt.Fprintln(os.Stderr, "govmm: the guest reached /init; on this host KVM interprets guest kernel code and SYSCALL from guest user space is broken, so user space cannot run (HOST.md): boot verified up to /init")
		return 0, nil
	}
	if res.Err != nil {
		return 0, res.Err
	}
	return 0, nil
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// writePhases prints each milestone with its time and the exits of the
// phase that ended there.
func writePhases(w io.Writer, ph []vmm.PhaseRecord) {
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
