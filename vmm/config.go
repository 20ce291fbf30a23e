// Package vmm assembles a virtual machine: KVM VM and vCPUs with no
// in-kernel irqchip, guest memory, govmm's local APICs (package vlapic), the
// platform devices, the CPUID and MSR configuration that routes the APIC to
// user space, and the accounting. It runs the vCPUs until the guest ends.
package vmm

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/loader"
	"github.com/govmm/govmm/memory"
)

// X2APIC says whether CPUID advertises x2APIC.
type X2APIC int

const (
	X2APICOn  X2APIC = iota // CPUID.1:ECX.x2APIC set (the default)
	X2APICOff               // xAPIC only: EXTD is reserved
)

// Doorbell says when the SYSCALL doorbell is offered.
// LAPICKind is whose local APIC the VM's vCPUs have (--lapic).
type LAPICKind int

const (
	// LAPICGovmm: govmm's own, in user space (package vlapic), with no
	// in-kernel irqchip (the default).
	LAPICGovmm LAPICKind = iota
	// LAPICKVM: KVM's in-kernel LAPIC (KVM_CAP_SPLIT_IRQCHIP): KVM's
	// timer, IPIs, PV EOI and halts, while the IOAPIC, the remapping unit,
	// PCI, MSI-X, virtio, the ACPI tables and CPUID stay govmm's. The
	// reference every figure of govmm's LAPIC is measured against.
	LAPICKVM
)

// LAPICKinds are --lapic's values, in LAPICKind order.
var LAPICKinds = []string{"govmm", "kvm"}

// String is the kind as --lapic spells it.
func (k LAPICKind) String() string {
	if int(k) < len(LAPICKinds) {
		return LAPICKinds[k]
	}
	return fmt.Sprintf("LAPICKind(%d)", int(k))
}

// ParseLAPIC reads --lapic's value.
func ParseLAPIC(s string) (LAPICKind, error) {
	for i, k := range LAPICKinds {
		if s == k {
			return LAPICKind(i), nil
		}
	}
	return 0, fmt.Errorf("--lapic=%q: want govmm or kvm", s)
}

type Doorbell int

const (
	DoorbellAuto Doorbell = iota // on emulating hosts only (HostEmulates)
	DoorbellOn
	DoorbellOff
)

// ParseDoorbell reads a --syscall-doorbell value.
func ParseDoorbell(s string) (Doorbell, error) {
	switch s {
	case "auto", "":
		return DoorbellAuto, nil
	case "on":
		return DoorbellOn, nil
	case "off":
		return DoorbellOff, nil
	}
	return 0, fmt.Errorf("--syscall-doorbell=%q: want auto, on or off", s)
}

// enabled resolves auto against this host.
func (d Doorbell) enabled() bool {
	return d == DoorbellOn || d == DoorbellAuto && HostEmulates()
}

// Config describes a VM.
type Config struct {
	CPUs    int
	MemSize uint64
	X2APIC  X2APIC
	// IOMMU adds the VT-d interrupt-remapping unit (with x2APIC destinations
	// when X2APIC is on).
	IOMMU bool
	// PVIPI advertises govmm's paravirtual send-IPI (package pvipi).
	PVIPI bool
	// PVEOI advertises KVM's PV EOI, served by govmm (edge EOIs without exits).
	PVEOI bool
	// AVIC selects AVIC-style interrupt delivery (vlapic.Options.AVIC):
	// fixed and lowest-priority edge interrupts are posted to the target's
	// IRR backing page without its lock. It implies PVEOI, so that an edge
	// EOI costs no exit either when the guest uses PV EOI. false is the
	// plain path, kept for comparison on the same guest.
	AVIC bool
	// LAPIC is whose local APIC the vCPUs have (LAPICGovmm, LAPICKVM).
	// Under LAPICKVM, PVEOI is KVM's own PV EOI (the same ABI, served
	// inside KVM); PVIPI and AVIC, which are govmm's LAPIC's, are refused
	// (Validate); HaltPoll is not govmm's to set (KVM's halt polling is the
	// kvm module's halt_poll_ns).
	LAPIC LAPICKind
	// SyscallDoorbell offers govmm's SYSCALL doorbell (package pvsyscall),
	// by default only on hosts whose KVM gets SYSCALL wrong.
	SyscallDoorbell Doorbell
	Kernel          []byte // a Multiboot v1 image, a Linux bzImage or an ELF vmlinux
	Initrd          []byte // Linux only
	// RunDecompressor enters a bzImage at its own decompressor; by default
	// govmm decompresses the payload and enters startup_64 directly, unless
	// it cannot decompress the payload's format (loader.
	// ErrUnsupportedPayload): then the decompressor runs, and a line on
	// stderr says so.
	RunDecompressor bool
	Cmdline         string
	Modules         []loader.Module
	// Console is the serial port's output. An AccountingWatcher (the
	// Linux harness's console, linuxguest.Console) is also given the VM's
	// accounting.
	Console io.Writer
	// ConsoleInput, if set, is the serial port's input: Run pumps it into
	// the UART's receive FIFO (devices.Serial.Pump) until it ends or the VM
	// stops. EOF ends input only; the guest keeps running. Run does not close
	// it, and a Read in progress when the VM stops is left to return on its
	// own (its bytes are dropped).
	ConsoleInput io.Reader
	KVMPath      string // default /dev/kvm
	// Log is where the VM reports what it recovered from or gave up on
	// (a host feature it went without, vCPUs abandoned, the watchdog's
	// goroutine dump); nil: slog's default logger. Never the guest's
	// console.
	Log *slog.Logger
	// KernelPath is where Kernel was read from: a Multiboot kernel's
	// command line starts with it, as QEMU builds it ("KERNEL ARGS"), so a
	// test kernel that reads argv[0] finds its arguments after it. Empty:
	// the command line is Cmdline alone.
	KernelPath string
	// TSCDeadline advertises TSC-deadline mode: auto where the host probe
	// finds its writes reach govmm (vmm.Host), or forced on or off.
	TSCDeadline hostprobe.Setting
	// HaltPoll bounds halt polling: after HLT a vCPU's thread polls for a
	// wake-up for up to this long before it sleeps, the window adapting
	// per vCPU by KVM's rule (package haltpoll; KVM's own default bound
	// is 200µs). 0 never polls; nor does a VM with more vCPUs than the
	// host gives govmm CPUs (HaltPolling), where a polling thread would
	// take a CPU a runnable vCPU needs.
	HaltPoll time.Duration
	// CPUAffinity pins vCPU i's thread to host CPU CPUAffinity[i %
	// len(CPUAffinity)] (--cpu-affinity, as Cloud Hypervisor's --cpus
	// affinity= and libvirt's vcpupin); empty: the kernel places them.
	CPUAffinity []int
	// KVMRun is how the vCPUs with govmm's LAPIC enter the guest
	// (--kvm-run): auto (the zero value), syscall or raw. KVM's LAPIC's
	// loop always takes Go's system-call path: its KVM_RUN halts.
	KVMRun KVMRun
	// X2APICAtReset hands every CPU over in x2APIC mode whatever their
	// number, as firmware does above 254 CPUs (x2APICHandoff): Linux then
	// picks its APIC driver by the MADT instead of by probing, a path a
	// small VM otherwise never takes (tests). Needs X2APIC on.
	X2APICAtReset bool
	// Watchdog is how long a vCPU may serve one exit, or a device one
	// request, before the watchdog ends the VM as stuck (watchdog.go);
	// 0: DefaultWatchdog, negative: no watchdog.
	Watchdog time.Duration
	// Symbols names guest kernel addresses in dumps (Dump, SIGUSR2, the
	// stall dump); nil reads them from Kernel when it is an ELF image with
	// a symbol table (a vmlinux, the bare-metal guests).
	Symbols *ksyms.Table
	// Disk is the raw image behind a virtio-blk device on the PCI bus,
	// one queue (and MSI-X vector) per vCPU; no Path: no disk.
	Disk Disk
	// VirtioConsole adds a virtio console (Linux's hvc0) on the PCI bus.
	// Its output goes to Console like the serial port's (early boot
	// messages stay on the serial port until the guest's driver is up),
	// and ConsoleInput goes to it instead of the serial port.
	VirtioConsole bool

	// restore, set by Restore, makes New build the VM of a snapshot: no
	// kernel is loaded, each vCPU resumes its saved state, and the
	// snapshot's memory and devices' state are loaded last.
	restore *restoring
}

// Disk is a virtio-blk backing file.
type Disk struct {
	Path     string
	ReadOnly bool // the guest sees a read-only disk (VIRTIO_BLK_F_RO); the file is opened read-only
}

// ParseDisk reads a --disk value: FILE or FILE,ro or FILE,rw.
func ParseDisk(s string) (Disk, error) {
	path, opt, _ := strings.Cut(s, ",")
	d := Disk{Path: path}
	switch {
	case path == "":
		return d, fmt.Errorf("--disk=%q: want FILE, FILE,ro or FILE,rw", s)
	case opt == "ro":
		d.ReadOnly = true
	case opt != "" && opt != "rw":
		return d, fmt.Errorf("--disk=%q: unknown option %q (ro or rw)", s, opt)
	}
	return d, nil
}

// Delivery names the interrupt delivery path, as the accounting reports it:
// "avic" or "plain".
func (c *Config) Delivery() string {
	if c.AVIC {
		return "avic"
	}
	return "plain"
}

// DefaultMemSize is the RAM of a VM when none is asked for.
const DefaultMemSize = 128 << 20

// MaxVCPUs is the most vCPUs any x86 KVM creates: KVM_MAX_VCPUS is 1024
// in Linux 6.1 and at most 4096 where CONFIG_KVM_MAX_NR_VCPUS raises it.
// This host's own limit is checked once /dev/kvm is open.
const MaxVCPUs = 4096

// Validate checks what can be checked without KVM: the vCPU count, the
// RAM size, the disk image, the SYSCALL doorbell. New calls it before it
// opens /dev/kvm, so a bad value is reported as itself and not as a KVM
// problem on a machine without KVM; the command line calls it before
// reading anything large.
func (c *Config) Validate() error {
	if c.CPUs < 1 || c.CPUs > MaxVCPUs {
		return fmt.Errorf("cannot create %d vCPUs: want 1 to %d (KVM's most on x86)", c.CPUs, MaxVCPUs)
	}
	if c.X2APIC == X2APICOff && c.CPUs > 255 {
		return fmt.Errorf("%d vCPUs need x2APIC: xAPIC IDs stop at 254", c.CPUs)
	}
	if err := c.checkLAPIC(); err != nil {
		return err
	}
	if c.X2APICAtReset && c.X2APIC != X2APICOn {
		return errors.New("a hand-over in x2APIC mode (X2APICAtReset) needs x2APIC offered")
	}
	if c.MemSize != 0 {
		if err := memory.CheckSize(c.MemSize); err != nil {
			return err
		}
	}
	if c.Disk.Path != "" {
		if _, err := os.Stat(c.Disk.Path); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("--disk %s: %v", c.Disk.Path, err)
		}
	}
	if err := CheckAffinity(c.CPUAffinity); err != nil {
		return err
	}
	if c.SyscallDoorbell != DoorbellOn {
		return nil // nothing to check: no host probe
	}
	return checkDoorbell(c.SyscallDoorbell, HostEmulates())
}

// startCPUs is the CPUs the process may run on, read at start-up: a
// thread's mask read later may be a pinned vCPU thread's.
var startCPUs, startCPUsErr = func() (unix.CPUSet, error) {
	var set unix.CPUSet
	return set, unix.SchedGetaffinity(0, &set)
}()

// CheckAffinity refuses a --cpu-affinity list naming a host CPU this
// process may not run on (its affinity mask at start-up).
func CheckAffinity(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	set := startCPUs
	if startCPUsErr != nil {
		return fmt.Errorf("--cpu-affinity: cannot read this process's CPUs: %v", startCPUsErr)
	}
	for _, c := range cpus {
		if c < 0 || c >= len(set)*64 || !set.IsSet(c) {
			return fmt.Errorf("--cpu-affinity: host CPU %d is not one this process may run on (taskset -p $$ lists them)", c)
		}
	}
	return nil
}

// checkLAPIC refuses what only govmm's LAPIC has under --lapic=kvm, in
// one line each that says why and what KVM offers instead.
func (c *Config) checkLAPIC() error {
	if c.LAPIC != LAPICKVM {
		return nil
	}
	if c.AVIC {
		return errors.New("--avic with --lapic=kvm: AVIC-style delivery is govmm's LAPIC's; KVM's LAPIC posts interrupts itself where the host has APICv or AVIC")
	}
	return nil
}

// checkHost checks the vCPU count against this host's KVM (maxCPUs,
// KVM_CAP_MAX_VCPUS).
func (c *Config) checkHost(maxCPUs int) error {
	if c.CPUs > maxCPUs {
		return fmt.Errorf("cannot create %d vCPUs: this host's KVM allows 1 to %d", c.CPUs, maxCPUs)
	}
	return nil
}

// checkDoorbell refuses the SYSCALL doorbell forced on where the host runs
// guest kernel code in hardware: SYSCALL there reaches the kernel at CPL0
// by itself, and the trampoline (user-executable, pointed at by LSTAR)
// would then run at CPL0 and fault.
func checkDoorbell(d Doorbell, emulates bool) error {
	if d == DoorbellOn && !emulates {
		return errors.New("--syscall-doorbell=on: this host runs guest kernel code with VT-x/AMD-V (govmm host), where SYSCALL needs no doorbell and the trampoline would fault at CPL0")
	}
	return nil
}

// AccountingWatcher is a console that stamps what the guest prints with
// the VM's exit counts at that moment (linuxguest.Console: the exits at
// each boot milestone). The interface keeps vmm free of the harness, which
// imports vmm.
type AccountingWatcher interface {
	WatchAccounting(*accounting.VM)
}
