package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// bootLinux boots kernel (path) in mode on cpus vCPUs and checks the
// kernel's own log: APIC mode, remapping, CPUs online. Where the guest
// reaches its u-root shell (every host with govmm's kernel: on emulating
// ones through the SYSCALL doorbell), the script's steps are typed into it
// and it must end by powering off; with no steps it is just powered off.
func bootLinux(t *testing.T, kernel string, govmmKernel bool, mode string, cpus int, pvIPI bool, steps ...linuxguest.ScriptStep) *linuxRun {
	t.Helper()
	return bootLinuxEdit(t, kernel, govmmKernel, mode, cpus, pvIPI, nil, steps...)
}

// linuxBootLimit is how long one Linux boot may run: 10 minutes (CI's
// longest boot, Debian's kernel in the nested AMD-V host, takes under 3),
// or $GOVMM_LINUX_BOOT_LIMIT (a Go duration) for kernels or hosts slower
// than CI's (make boot-debian-default sets it). Either way it ends two
// minutes before the test binary's own deadline: a guest that hangs must
// end by this limit, with its console and govmm's end state in the
// failure, not by go test's timeout panic, which prints neither (CI's
// stop-37 run lost two hung boots' consoles so).
func linuxBootLimit(t *testing.T) time.Duration {
	d := 10 * time.Minute
	if s := os.Getenv("GOVMM_LINUX_BOOT_LIMIT"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 {
			t.Fatalf("GOVMM_LINUX_BOOT_LIMIT=%q is not a positive duration", s)
		}
	}
	if dl, ok := t.Deadline(); ok {
		left := time.Until(dl) - 2*time.Minute
		if left <= 0 {
			t.Fatalf("the test binary's deadline (%v) leaves no time for a Linux boot", dl.Format(time.TimeOnly))
		}
		d = min(d, left)
	}
	return d
}

// bootLinuxEdit is bootLinux with a last say on the VM's configuration.
func bootLinuxEdit(t *testing.T, kernel string, govmmKernel bool, mode string, cpus int, pvIPI bool, edit func(*vmm.Config), steps ...linuxguest.ScriptStep) *linuxRun {
	t.Helper()
	lr, err := bootLinuxOnce(t, kernel, govmmKernel, mode, cpus, pvIPI, edit, steps...)
	if err == nil {
		return lr
	}
	// No retry: guest user space keeps its state on every host (the Go
	// crashes once blamed on the emulating host were govmm's noxsave, see
	// complete/xsave.go), so a crash there is a failure like any other.
	if crash := userSpaceCrash(lr.log); crash != "" {
		t.Fatalf("guest user space crashed (%q): %v", crash, err)
	}
	t.Fatalf("%v\n%s", err, endState(lr.vm))
	return nil
}

// reUserCrash is a Go runtime crash report in guest user space (u-root's
// init, shell and govmm's guest programs are Go).
var reUserCrash = regexp.MustCompile(`(?m)^(fatal error: .*|unexpected fault address .*|runtime: .*unexpected return pc.*|\[signal SIG.*)$`)

// reKernelCrash is the guest kernel's own crash report.
var reKernelCrash = regexp.MustCompile(`BUG: |Oops: |general protection fault`)

// userSpaceCrash returns the first line of a Go runtime crash in guest user
// space (after /init started, with no kernel BUG or oops before it), or "".
func userSpaceCrash(log string) string {
	i := strings.Index(log, "Run /init as init process")
	if i < 0 {
		return ""
	}
	after := log[i:]
	loc := reUserCrash.FindStringIndex(after)
	if loc == nil || reKernelCrash.MatchString(after[:loc[0]]) {
		return ""
	}
	return after[loc[0]:loc[1]]
}

// bootLinuxOnce is one boot of bootLinux: set-up problems end the test,
// what the guest did wrong is returned (with the run, for its console).
func bootLinuxOnce(t *testing.T, kernel string, govmmKernel bool, mode string, cpus int, pvIPI bool, edit func(*vmm.Config), steps ...linuxguest.ScriptStep) (*linuxRun, error) {
	t.Helper()
	needKVM(t)
	img, err := os.ReadFile(kernel)
	if err != nil {
		t.Fatalf("kernel not built or fetched (make kernel / make debian-kernel): %v", err)
	}
	rd, err := os.ReadFile(filepath.Join(cacheDir(), "initramfs.cpio"))
	if err != nil {
		t.Fatalf("initramfs not built (make initramfs): %v", err)
	}
	// govmm's kernel writes its benchmark and storm results to the kernel
	// log as well as to the sysfs file ipibench prints. With
	// ignore_loglevel (u-root's init lowers the console level below
	// KERN_INFO) that copy reaches the console from the kernel itself, so
	// the tests read the kernel's figures, not a user program's copy.
	extra := ""
	if govmmKernel {
		extra = "ignore_loglevel"
	}
	cfg, m, err := linuxguest.VMConfig(mode, cpus, govmmKernel, pvIPI, extra)
	if err != nil {
		t.Fatal(err)
	}
	con := linuxguest.NewConsole(nil, linuxguest.BootMilestones)
	if len(steps) == 0 {
		steps = linuxguest.ShellCommands()
	}
	script, err := linuxguest.NewConsoleScript(con, steps...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kernel, cfg.Initrd, cfg.Console, cfg.MemSize, cfg.ConsoleInput = img, rd, con, 512<<20, script
	cfg.PVEOI = pvIPI // the PV test turns on both paravirtual paths
	if edit != nil {
		edit(&cfg)
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	res := vm.Run(linuxBootLimit(t))
	script.Close()
	st := linuxguest.ParseLog(con.Log())
	lr := &linuxRun{st, vm, res, con.Log()}
	if err := st.Verify(m, cpus, linuxguest.WantPVIPI(cfg, govmmKernel)); err != nil {
		return lr, fmt.Errorf("%v (ended by %s: %v)\n%s", err, res.How, res.Err, consoleExcerpt(con.Log()))
	}
	for _, p := range con.Reached() {
		t.Logf("%-20s at %8v, %7d exits", p.Name, p.At.Round(time.Millisecond), p.Exits)
	}
	t.Logf("mode %q, remapping %q, %d CPUs, ended by %s", st.APICMode, st.IRQRemap, st.CPUsUp, res.How)
	if script.Prompted() {
		// User space ran: the whole script must have, and poweroff ends it.
		if err := script.Finished(); err != nil {
			return lr, fmt.Errorf("%v\n%s", err, consoleExcerpt(con.Log()))
		}
		if res.How != "poweroff" {
			return lr, fmt.Errorf("the guest ended by %s (%v), want poweroff\n%s", res.How, res.Err, consoleExcerpt(con.Log()))
		}
		if d, n, ok := linuxguest.UserStartup(con.Reached()); ok {
			t.Logf("user space: /init to shell prompt in %v, %d SYSCALLs through the doorbell (%.0f/s)",
				d.Round(time.Millisecond), n, float64(n)/d.Seconds())
		}
	} else if govmmKernel {
		return lr, fmt.Errorf("govmm's kernel did not reach the u-root shell (ended by %s: %v)\n%s", res.How, res.Err, consoleExcerpt(con.Log()))
	}
	return lr, nil
}

// linuxRun is what a Linux boot left: the kernel's log parsed, the VM (for
// its accounting), how it ended, and the whole console.
type linuxRun struct {
	st  linuxguest.State
	vm  *vmm.VM
	res vmm.Result
	log string
}

// reStorm is the guest's storm summary (guest/linux/patches/0003), and
// reStormInjected its comparison, CPU by CPU, of the call-function
// interrupts each CPU took with the injections govmm counted for it.
var (
	reStorm         = regexp.MustCompile(`govmm-ipistorm: (\d+) calls sent, (\d+) ran, (\d+) call-function interrupts taken, \d+ cycles/call: (.*)`)
	reStormInjected = regexp.MustCompile(`govmm-ipistorm: govmm injected (\d+) call-function vectors: (.*)`)
)

// checkStorm checks the kernel's IPI storm (section 4): every call ran
// once, and every CPU took exactly the call-function vectors govmm injected
// into it. The guest reads both counts on each CPU with interrupts off
// before and after the storm; the section (opened after the first reading,
// closed before the second) cannot have more injections than that window.
func checkStorm(t *testing.T, lr *linuxRun, cpus, n int) {
	t.Helper()
	vm := lr.vm
	m := reStorm.FindStringSubmatch(lr.log)
	mi := reStormInjected.FindStringSubmatch(lr.log)
	if m == nil || mi == nil {
		t.Fatalf("no storm summary in the console; its storm lines: %q", regexp.MustCompile(`(?m)^.*ipistorm.*$`).FindAllString(lr.log, -1))
	}
	sent, _ := strconv.ParseUint(m[1], 10, 64)
	ran, _ := strconv.ParseUint(m[2], 10, 64)
	cal, _ := strconv.ParseUint(m[3], 10, 64)
	injected, _ := strconv.ParseUint(mi[1], 10, 64)
	if sent != uint64(cpus*n) || ran != sent || strings.TrimSpace(m[4]) != "every call ran exactly once" {
		t.Errorf("guest storm: %d sent, %d ran (%s), want %d each", sent, ran, m[4], cpus*n)
	}
	if injected != cal || strings.TrimSpace(mi[2]) != "as many as every CPU took" {
		t.Errorf("the guest took %d call-function interrupts, govmm injected %d (%s)", cal, injected, mi[2])
	}
	var sec *accounting.SectionReport
	r := vm.Accounting().Report()
	for i := range r.Sections {
		if r.Sections[i].ID == 4 {
			sec = &r.Sections[i]
		}
	}
	if sec == nil {
		t.Fatal("govmm has no section 4")
	}
	// CALL_FUNCTION_SINGLE_VECTOR 0xfb, CALL_FUNCTION_VECTOR 0xfc
	inj := sec.Total.InjectedVec["0xfb"] + sec.Total.InjectedVec["0xfc"]
	if inj == 0 || inj > injected {
		t.Errorf("govmm's section 4 has %d call-function injections, the guest's window around it %d", inj, injected)
	}
	var delivered uint64
	for _, d := range sec.Total.IPIDelivered {
		delivered += d
	}
	t.Logf("storm: %d calls, %d call-function interrupts = %d injections (%d in section 4); govmm: %d IPIs delivered, %d exits",
		sent, cal, injected, inj, delivered, sec.Total.Exits)
}

// reCrash finds where a guest's crash report begins: a Go program's fatal
// error or panic (u-root's init and shell are Go; the runtime's own
// "runtime: " lines, e.g. the stack bounds, come before "fatal error"), a
// kernel panic, BUG or oops. Its first lines say what happened; a goroutine
// dump after them can push them out of the console's tail.
var reCrash = regexp.MustCompile(`(?m)^(runtime: |fatal error: |panic: |unexpected fault address|\[signal |.*Kernel panic|.*BUG: |.*Oops: |.*general protection fault)`)

// consoleExcerpt is what a failed Linux boot test prints of the console:
// the start of the first crash report, if any, with the lines before it
// (what the kernel said just then), then the console's end.
func consoleExcerpt(log string) string {
	var out strings.Builder
	if loc := reCrash.FindStringIndex(log); loc != nil && loc[0] < len(log)-3000 {
		start := loc[0]
		for n := 0; n < 6 && start > 0; n++ {
			start = strings.LastIndexByte(log[:start-1], '\n') + 1
		}
		end := min(loc[0]+2000, len(log))
		fmt.Fprintf(&out, "start of the crash report (console offset %d), after the lines before it:\n%s\n...\n", loc[0], log[start:end])
	}
	out.WriteString("last of the console:\n")
	out.WriteString(tail(log, 3000))
	return out.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestBootGovmmKernelPV boots govmm's kernel with --pv-ipi and --pv-eoi:
// its IPIs go through govmm's PV trap, and Linux's stock PV EOI (served by
// govmm) ends interrupts without EOI exits.
//
// It also boots with TSC-deadline mode not advertised, as govmm does on VMX
// hosts whose KVM drops TSC_DEADLINE writes (hostprobe): Linux then runs
// its LAPIC timer one-shot (TMICT writes) and must reach the shell all the
// same (make boot-no-tsc-deadline does all four modes).
func TestBootGovmmKernelPV(t *testing.T) {
	t.Parallel()
	// Also halt polling, as govmm boot has it by default: Linux's idle
	// halts and its IPIs' wake-ups run through the poll.
	// And a disk: blkbench's exits per I/O at queue depth 1 and 32 with
	// PV EOI (the completion's EOI costs no exit).
	disk := makeDisk(t, map[string]string{"host.txt": "pv\n"}, 8, 16)
	off, n := disk.scratch()
	edit := func(c *vmm.Config) {
		c.TSCDeadline, c.HaltPoll, c.Disk = hostprobe.Off, vmm.DefaultHaltPoll, vmm.Disk{Path: disk.path}
	}
	bench := func(depth int) string {
		return fmt.Sprintf("blkbench -n %d -depth %d -rw both -offset %d -size %d", 64/depth, depth, off, n)
	}
	lr := bootLinuxEdit(t, filepath.Join(cacheDir(), "linux", "vmlinux"), true, "cluster", 2, true, edit,
		linuxguest.ShellCommands("ipibench -n 20", `section 3 exits: .*exits/IPI`,
			"ipibench -storm -n 200", `govmm counted \d+ IPIs`,
			bench(1), `blkbench: cpu 1 interrupts \d+`,
			bench(32), `blkbench: cpu 1 interrupts \d+`)...)
	for _, line := range regexp.MustCompile(`(?m)^blkbench: .*$`).FindAllString(lr.log, -1) {
		t.Log(line)
	}
	vm := lr.vm
	if tot := vm.Accounting().Report().Total; tot.ByCause["msr_tsc_deadline_write"] != 0 || tot.ByCause["msr_x2apic_timer_icr_write"] == 0 {
		t.Errorf("TSC deadline off: %d TSC_DEADLINE writes, %d TMICT writes; want none and some",
			tot.ByCause["msr_tsc_deadline_write"], tot.ByCause["msr_x2apic_timer_icr_write"])
	}
	checkStorm(t, lr, 2, 200)
	r := vm.Accounting().Report()
	if r.Total.IPISent["pv"] == 0 {
		t.Errorf("no PV IPI sent: %v", r.Total.IPISent)
	}
	if r.Total.PVEOIs == 0 {
		t.Errorf("no PV EOI")
	}
	t.Logf("IPIs sent by kind: %v; %d PV EOIs, %d EOI exits, %d injections", r.Total.IPISent, r.Total.PVEOIs,
		r.Total.ByCause["msr_x2apic_eoi_write"], r.Total.Injected)
	if runtime.NumCPU() >= 2 {
		if r.HaltPoll == "" || strings.HasPrefix(r.HaltPoll, "off") || r.Total.HaltPolls == 0 {
			t.Errorf("halt polling %q: %d halts polled", r.HaltPoll, r.Total.HaltPolls)
		}
		t.Logf("halt polling (%s): %d of %d wake-ups polled, %d hits, %v polled", r.HaltPoll, r.Total.HaltPolls,
			r.Total.Wakeups, r.Total.HaltPollHits, time.Duration(r.Total.HaltPollNanos))
	}
}

// TestBootDebianKernel boots Debian's stock cloud kernel, with a disk, so
// that it enumerates the same PCI bus govmm's kernel gets. One vCPU: Linux
// still picks its APIC mode (and enables remapping) the same way, and a
// distribution kernel boots for a quarter of an hour or more on an
// emulating host, so CI boots it in cluster mode only (x2APIC, remapping
// and the bus in one boot), side by side with the other boots (one vCPU
// leaves a host core free); govmm's own kernel covers SMP and every mode.
// make boot-debian boots all three modes stock Linux has
// (GOVMM_DEBIAN_MODES=off,physical,cluster).
func TestBootDebianKernel(t *testing.T) {
	t.Parallel()
	kernel := filepath.Join(cacheDir(), "debian-kernel", "vmlinuz")
	modes := []string{"cluster"}
	if s := os.Getenv("GOVMM_DEBIAN_MODES"); s != "" {
		modes = strings.Split(s, ",")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			// One mode (CI's) runs in its parent's slot, so that this
			// long boot starts among the first parallel tests instead of
			// queueing behind them; several run side by side.
			if len(modes) > 1 {
				t.Parallel()
			}
			// The stock kernel enumerates the same PCI bus (its virtio
			// drivers are modules the initramfs does not load).
			disk := makeDisk(t, nil, 4, 4)
			lr := bootLinuxEdit(t, kernel, false, mode, 1, false, func(c *vmm.Config) { c.Disk = vmm.Disk{Path: disk.path} })
			for _, want := range []string{`pci 0000:00:00.0: \[1b36:0008\]`, `pci 0000:00:0\d.0: \[1af4:1042\]`} {
				if !regexp.MustCompile(want).MatchString(lr.log) {
					t.Errorf("the kernel log has no %q: the stock kernel did not enumerate the PCI bus", want)
				}
			}
		})
	}
}

// TestBootDebianDefaultKernel boots Debian's default kernel
// (linux-image-amd64: xz payload with the x86 BCJ filter, far more built
// in than the cloud flavour) in the same three modes, to the u-root shell.
// About a quarter of an hour per boot on an emulating host, so it is not
// part of the test command: `make boot-debian-default` fetches the kernel
// and runs it (GOVMM_DEBIAN_DEFAULT_KERNEL names the image).
func TestBootDebianDefaultKernel(t *testing.T) {
	kernel := os.Getenv("GOVMM_DEBIAN_DEFAULT_KERNEL")
	if kernel == "" {
		t.Skip("SKIP: Debian's default kernel boots only on request: make boot-debian-default")
	}
	for _, mode := range []string{"off", "physical", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			bootLinux(t, kernel, false, mode, 1, false)
		})
	}
}

// TestBootGovmmKernel boots govmm's own guest kernel in all four modes,
// physical with AVIC-style delivery, each with a virtio-blk disk (one
// queue and MSI-X vector per vCPU) and the virtio console as its console.
// In the shell it mounts the disk, reads a file the test wrote, writes
// one the test reads back after poweroff, and runs blkbench's reads and
// writes on both CPUs at once in the disk's scratch area.
func TestBootGovmmKernel(t *testing.T) {
	t.Parallel()
	kernel := filepath.Join(cacheDir(), "linux", "vmlinux")
	for _, mode := range []string{"off", "physical", "cluster", "mixed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			disk := makeDisk(t, map[string]string{"host.txt": "written by the host for mode " + mode + "\n"}, 16, 24)
			off, n := disk.scratch()
			avic := mode == "physical"
			edit := func(c *vmm.Config) { c.Disk, c.AVIC = vmm.Disk{Path: disk.path}, avic }
			// In the shell: arithmetic (so the echoed command line cannot
			// match), the disk, then govmm's irqstat (a Go program reading /proc).
			lr := bootLinuxEdit(t, kernel, true, mode, 2, false, edit,
				linuxguest.ShellCommands(append(diskShellSteps(mode),
					fmt.Sprintf("blkbench -n 20 -depth 2 -rw both -offset %d -size %d", off, n), `blkbench: cpu 1 interrupts \d+`,
					"irqstat", `CAL .*total`,
					"ipibench -storm -n 100", `govmm counted \d+ IPIs`)...)...)
			checkStorm(t, lr, 2, 100)
			if got, ok := readDiskFile(t, disk, "guest.txt"); got != "guest-42\n" {
				t.Errorf("the guest's file reads back %q (found %v), want %q", got, ok, "guest-42\n")
			}
			vm := lr.vm
			r := vm.Accounting().Report()
			p := r.Platform
			checkBootDevices(t, lr, r, 2)
			t.Logf("IPIs sent %v; device interrupts: %d physical, %d logical destinations, %d remapped",
				r.Total.IPISent, p.DevicePhysical, p.DeviceLogical, p.Remapped)
			switch mode {
			case "mixed":
				// Xen's mixed mode: IPIs cluster-addressed, device
				// interrupts physically addressed.
				if r.Total.IPISent["x2apic_logical"] == 0 {
					t.Error("mixed mode: no cluster-addressed ICR write")
				}
				if p.DeviceLogical != 0 || p.DevicePhysical == 0 {
					t.Errorf("mixed mode: device interrupts %d physical, %d logical; want physical only",
						p.DevicePhysical, p.DeviceLogical)
				}
			case "cluster":
				if r.Total.IPISent["x2apic_logical"] == 0 {
					t.Error("cluster mode: no cluster-addressed ICR write")
				}
				if p.DevicePhysical != 0 || p.DeviceLogical == 0 {
					t.Errorf("cluster mode: device interrupts %d physical, %d logical; want logical only",
						p.DevicePhysical, p.DeviceLogical)
				}
			case "physical":
				if r.Total.IPISent["x2apic_logical"] != 0 {
					t.Error("physical mode: cluster-addressed ICR writes")
				}
				if r.Delivery != "avic" {
					t.Errorf("physical mode runs with --avic: delivery %q", r.Delivery)
				}
			}
			// With the remapping unit every MSI-X message is in remappable
			// format (an IRTE per vector); without it, compatibility format.
			iommu := mode == "cluster" || mode == "mixed"
			if iommu && p.Remapped < r.DeviceTotal() || !iommu && p.Remapped != 0 {
				t.Errorf("%s: %d interrupts remapped, %d MSI-X deliveries; want all remapped: %v", mode, p.Remapped, r.DeviceTotal(), iommu)
			}
		})
	}
}

// diskShellSteps are the shell's steps with the test disk of mode (made
// with host.txt): arithmetic (so the echoed command line cannot match),
// host.txt read back, guest.txt written, the disk unmounted; command and
// expected output alternating, as linuxguest.ShellCommands takes them.
func diskShellSteps(mode string) []string {
	return []string{"echo govmm-$((40+2))", `govmm-42`,
		"mkdir /mnt", `\n\$ `,
		"mount -t ext2 /dev/vda /mnt", `\n\$ `,
		"cat /mnt/host.txt", `written by the host for mode ` + mode,
		"echo guest-$((6*7)) > /mnt/guest.txt", `\n\$ `,
		"umount /mnt", `\n\$ `}
}

// With the CPUs handed over in x2APIC mode, as firmware does above 254
// CPUs, Linux picks its APIC driver by each driver's MADT check in link
// order, not by probing: cluster mode must still get the cluster driver
// and mixed the mixed one. Before the mixed driver had a MADT check of its
// own, every cluster-mode boot of 288 vCPUs came up in mixed mode (make
// seeds-288). Here on 2 vCPUs (Config.X2APICAtReset), the log's "Setting
// APIC routing to" saying the MADT path was taken.
func TestBootX2APICHandoff(t *testing.T) {
	t.Parallel()
	kernel := filepath.Join(cacheDir(), "linux", "vmlinux")
	for _, mode := range []string{"cluster", "mixed"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			lr := bootLinuxEdit(t, kernel, true, mode, 2, false, func(c *vmm.Config) { c.X2APICAtReset = true })
			if !strings.Contains(lr.log, "Setting APIC routing to ") {
				t.Errorf("%s: no \"Setting APIC routing to\" in the log: the driver was not chosen by the MADT\n%s", mode, consoleExcerpt(lr.log))
			}
		})
	}
}

// checkBootDevices checks a Linux boot's virtio devices from govmm's side:
// the disk's queue vectors each went to the one CPU Linux's managed
// affinity gave its queue (queue q to CPU q with as many queues as CPUs),
// the console's output reached the console through its transmit queue,
// and the exits the serial port cost.
func checkBootDevices(t *testing.T, lr *linuxRun, r accounting.Report, cpus int) {
	t.Helper()
	var blk, con *accounting.DeviceReport
	for i := range r.Devices {
		switch r.Devices[i].Name {
		case "virtio-blk":
			blk = &r.Devices[i]
		case "virtio-console":
			con = &r.Devices[i]
		}
	}
	if blk == nil || con == nil {
		t.Fatalf("devices in the report: %+v, want virtio-blk and virtio-console", r.Devices)
	}
	queues := map[int]bool{}
	for _, v := range blk.Vectors {
		if v.Vector == 0 {
			continue // configuration changes
		}
		q := v.Vector - 1
		queues[q] = true
		if q >= cpus || v.ByCPU[q] != v.Delivered || v.Delivered == 0 {
			t.Errorf("virtio-blk queue %d (vector %d): %d delivered, by CPU %v; want all to CPU %d", q, v.Vector, v.Delivered, v.ByCPU, q)
		}
	}
	if len(queues) != cpus {
		t.Errorf("virtio-blk: interrupts from %d queues, want one per CPU (%d): %+v", len(queues), cpus, blk.Vectors)
	}
	var buf strings.Builder
	accounting.WriteDeviceTable(&buf, r.Devices)
	t.Logf("%s", buf.String())
	if con.Total() == 0 {
		t.Errorf("virtio-console: no interrupts: %+v", con.Vectors)
	}
	// The early log goes to the early console (devices.EarlyCon), whose
	// writes KVM coalesces, and the rest to hvc0: COM1 sees only its
	// driver's probe, not two exits per byte of the early log (15,000
	// bytes, 30,000 exits, before).
	serial, early, bytes := r.Total.ByCause["pio_serial"], r.Total.ByCause["mmio_early_console"], lr.vm.EarlyConsoleBytes()
	t.Logf("serial port exits %d, early console exits %d for %d bytes, coalesced %v (whole run)", serial, early, bytes, lr.vm.EarlyConsoleCoalesced())
	if bytes < 1000 {
		t.Errorf("the early console printed %d bytes: the early log did not go there", bytes)
	}
	if serial > 500 || (lr.vm.EarlyConsoleCoalesced() && early > bytes/50) {
		t.Errorf("console exits: COM1 %d, early console %d for %d bytes; want at most 500, and one per 50 bytes where coalesced", serial, early, bytes)
	}
}

func TestUserSpaceCrash(t *testing.T) {
	boot := "[ 1.0] Run /init as init process\ninit: starting\n"
	for _, c := range []struct{ log, want string }{
		{boot + "runtime: g1: frame.sp=0x1 top=0x2\nfatal error: traceback did not unwind completely\n", "fatal error: traceback did not unwind completely"},
		{boot + "unexpected fault address 0x1234\nfatal error: fault\n", "unexpected fault address 0x1234"},
		{boot + "$ irqstat\nCAL 1 2 total\n", ""},
		{"fatal error: before /init\n", ""},
		{boot + "[ 2.0] BUG: unable to handle page fault\nfatal error: after the kernel's own crash\n", ""},
	} {
		if got := userSpaceCrash(c.log); got != c.want {
			t.Errorf("userSpaceCrash(%q) = %q, want %q", c.log, got, c.want)
		}
	}
}

func TestConsoleExcerpt(t *testing.T) {
	log := strings.Repeat("early boot\n", 100) + "just before\nruntime: g1: frame.sp=0x1 top=0x2\nfatal error: traceback did not unwind completely\n" +
		strings.Repeat("goroutine 1 [running]:\n\truntime.throw(...)\n", 200) + "Kernel panic - not syncing: Attempted to kill init!\n"
	ex := consoleExcerpt(log)
	if !strings.Contains(ex, "start of the crash report") || !strings.Contains(ex, "just before\nruntime: g1: frame.sp=0x1 top=0x2\nfatal error: traceback") ||
		!strings.HasSuffix(ex, "Attempted to kill init!\n") {
		t.Errorf("excerpt lacks the crash's first line or the console's end:\n%s", ex)
	}
	if ex := consoleExcerpt("short console\nRun /init\n"); strings.Contains(ex, "crash report") {
		t.Errorf("a console without a crash got a crash excerpt:\n%s", ex)
	}
}
