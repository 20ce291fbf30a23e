// Package linuxguest is govmm's Linux guest harness: the VM configuration
// that makes Linux pick each APIC mode, the kernel log read back to verify
// it, the boot milestones watched on the console, and scripts typed into
// the guest's u-root shell. 'govmm boot', 'govmm bench' and the Linux boot
// tests use it; package vmm assembles the VMs (it loads a bzImage
// but knows nothing of what Linux is told or prints).
package linuxguest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/govmm/govmm/vmm"
)

// Mode is one of govmm boot's APIC modes: what the VM presents so that
// Linux picks that mode (docs/apic-reference.md), and the mode its log must then show.
type Mode struct {
	Name    string
	X2APIC  bool     // CPUID advertises x2APIC
	IOMMU   bool     // the VT-d unit (with EIM when X2APIC) and its DMAR table
	Cmdline string   // what govmm's guest kernel needs to pick the mode
	Want    []string // acceptable APICMode values of the kernel log
	// GovmmKernel: only govmm's guest kernel (its patch series) has it.
	GovmmKernel bool
}

// Modes are the modes of 'govmm boot --x2apic='.
var Modes = map[string]Mode{
	"off":      {Name: "off", Want: []string{"flat", "physflat"}},
	"physical": {Name: "physical", X2APIC: true, Want: []string{"physical x2apic"}},
	"cluster":  {Name: "cluster", X2APIC: true, IOMMU: true, Want: []string{"cluster x2apic"}},
	"mixed": {Name: "mixed", X2APIC: true, IOMMU: true, Cmdline: "govmm.apic=mixed", Want: []string{"mixed"},
		GovmmKernel: true},
}

// BaseCmdline is the command line govmm gives every Linux guest: early
// messages on the serial port, a reboot through the ACPI reset register,
// no lockup watchdog (an interpreted guest is slow, not stuck). The
// console proper is ConsoleSerial or ConsoleVirtio.
const BaseCmdline = EarlyConsole + " panic=-1 nowatchdog reboot=acpi"

// EarlyConsole prints the kernel's messages from early setup on, until
// its console driver is up, through govmm's early console
// (devices.EarlyCon at vmm.EarlyConBase): the 8250 early console driver
// every x86 kernel with SERIAL_8250_CONSOLE has, on 32-bit MMIO
// registers. Where the host has read-only slots and coalesced MMIO it
// costs about one exit per 170 bytes; on COM1 (earlyprintk=serial) each
// byte cost two, 30,000 exits to the shell.
const EarlyConsole = "earlycon=uart8250,mmio32,0xfd000000"

// The guest's console. govmm's kernel has virtio-console built in: once
// its driver is up the kernel's messages and the shell move from the
// 16550 (one exit per byte) to hvc0 (one notify per write, which with an
// ioeventfd costs no exit at all); the early boot console (EarlyConsole)
// prints until then. A stock distribution kernel has virtio-console as a
// module the u-root initramfs does not load, so it keeps the serial port.
const (
	ConsoleSerial = "console=ttyS0"
	ConsoleVirtio = "console=hvc0"
)

// SetConsole overrides VMConfig's choice of console: "serial" (ttyS0, no
// virtio console device), "virtio" (hvc0 on the virtio console; a stock
// kernel needs virtio_console built in), or "auto" (VMConfig's: virtio for
// govmm's kernel). It is how the cost of each is compared on one kernel.
func SetConsole(cfg *vmm.Config, console string) error {
	var want, not string
	switch console {
	case "auto":
		return nil
	case "serial":
		want, not, cfg.VirtioConsole = ConsoleSerial, ConsoleVirtio, false
	case "virtio":
		want, not, cfg.VirtioConsole = ConsoleVirtio, ConsoleSerial, true
	default:
		return fmt.Errorf("--console %q: want auto, serial or virtio", console)
	}
	args := strings.Fields(cfg.Cmdline)
	for i, a := range args {
		if a == not {
			args[i] = want
		}
	}
	cfg.Cmdline = strings.Join(args, " ")
	return nil
}

// EmulatingHostCmdline keeps a kernel away from what an emulating host's
// instruction emulator cannot run in kernel mode (docs/hosts.md; rdtscp, invpcid
// and fsgsbase found by disassembling govmm's kernel, guest/linux/README.md).
const EmulatingHostCmdline = "nofsgsbase tsc=reliable clearcpuid=smap,smep,umip,pku,ssse3,popcnt,sse4_1,sse4_2,aes,pclmulqdq,movbe,bmi1,bmi2,rdrand,rdseed,sha_ni,adx,rdtscp,invpcid cryptomgr.notests init_on_alloc=0"

// CheckMode refuses what VMConfig would refuse of mode and cpus, without
// probing the host.
func CheckMode(mode string, cpus int, govmmKernel bool) (Mode, error) {
	m, ok := Modes[mode]
	switch {
	case !ok:
		return m, fmt.Errorf("--x2apic=%s: want off, physical, cluster or mixed", mode)
	case !m.X2APIC && cpus > 255:
		return m, fmt.Errorf("--x2apic=off with %d vCPUs: xAPIC IDs stop at 254", cpus)
	case m.X2APIC && !m.IOMMU && cpus > 255:
		return m, fmt.Errorf("--x2apic=%s with %d vCPUs: without interrupt remapping Linux reaches APIC IDs up to 255 only; use cluster or mixed", mode, cpus)
	case m.GovmmKernel && !govmmKernel:
		return m, fmt.Errorf("--x2apic=%s needs govmm's guest kernel (its patch series provides the mode)", mode)
	}
	return m, nil
}

// VMConfig returns the VM configuration that boots a Linux kernel in
// mode on cpus vCPUs, or an error naming why the combination is impossible.
//
// pvIPI advertises govmm's PV send-IPI; govmm's kernel is then told to use
// it (govmm.pvipi=on).
func VMConfig(mode string, cpus int, govmmKernel, pvIPI bool, extra string) (vmm.Config, Mode, error) {
	m, err := CheckMode(mode, cpus, govmmKernel)
	if err != nil {
		return vmm.Config{}, m, err
	}
	return ModeConfig(m, cpus, govmmKernel, pvIPI, extra), m, nil
}

// PhysicalRemapped is x2APIC physical mode with the remapping unit, which
// Linux needs for APIC IDs above 255: told with x2apic_phys, Linux picks
// the physical driver though remapping would allow cluster. The seeds'
// mixed-mode experiment compares physical with cluster and mixed this way
// on 288 and 512 vCPUs, as the Xen post's 512-CPU EPYC did.
var PhysicalRemapped = Mode{Name: "physical", X2APIC: true, IOMMU: true, Cmdline: "x2apic_phys", Want: []string{"physical x2apic"}}

// ModeConfig is VMConfig for a mode already checked.
func ModeConfig(m Mode, cpus int, govmmKernel, pvIPI bool, extra string) vmm.Config {
	parts := []string{BaseCmdline, ConsoleSerial}
	if govmmKernel {
		parts[1] = ConsoleVirtio
	}
	if vmm.HostEmulates() {
		parts = append(parts, EmulatingHostCmdline)
	}
	parts = append(parts, m.Cmdline)
	if pvIPI {
		parts = append(parts, "govmm.pvipi=on")
	}
	parts = append(parts, extra)
	cfg := vmm.Config{CPUs: cpus, IOMMU: m.IOMMU, PVIPI: pvIPI, VirtioConsole: govmmKernel,
		Cmdline: strings.Join(strings.Fields(strings.Join(parts, " ")), " ")}
	if !m.X2APIC {
		cfg.X2APIC = vmm.X2APICOff
	}
	return cfg
}

// PVIPI is the paravirtual send-IPI a boot must end up using.
type PVIPI int

const (
	NoPVIPI    PVIPI = iota // none is asked of the kernel
	GovmmPVIPI              // govmm's (govmm's LAPIC; its kernel, govmm.pvipi=on)
	KVMPVIPI                // KVM's hypercall (--lapic=kvm; any kernel built with CONFIG_KVM_GUEST)
)

// WantPVIPI is the PV send-IPI cfg's --pv-ipi asks of its kernel: on
// govmm's LAPIC, govmm's, which only govmm's kernel (govmmKernel) knows;
// on KVM's LAPIC, KVM's own, which govmm maps it to.
func WantPVIPI(cfg vmm.Config, govmmKernel bool) PVIPI {
	switch {
	case !cfg.PVIPI:
		return NoPVIPI
	case cfg.LAPIC == vmm.LAPICKVM:
		return KVMPVIPI
	case govmmKernel:
		return GovmmPVIPI
	}
	return NoPVIPI
}

// Verify checks a boot against its mode: /init reached, the mode chosen,
// remapping as presented, every CPU online, and the PV send-IPI pv in use.
func (s State) Verify(m Mode, cpus int, pv PVIPI) error {
	switch {
	case pv == GovmmPVIPI && s.InitRun && !s.PVIPI:
		return fmt.Errorf("--pv-ipi: the kernel did not switch to govmm's PV send-IPI")
	case pv == KVMPVIPI && s.InitRun && !s.KVMPVIPI:
		return fmt.Errorf("--pv-ipi with --lapic=kvm: the kernel did not switch to KVM's PV send-IPI (\"kvm-guest: setup PV IPIs\")")
	case s.Panic != "" && !s.InitRun:
		return fmt.Errorf("the guest kernel panicked before /init: %s", s.Panic)
	case !s.InitRun:
		return fmt.Errorf("the guest did not reach /init")
	case !slices.Contains(m.Want, s.APICMode):
		return fmt.Errorf("--x2apic=%s: the kernel chose APIC mode %q, want %s", m.Name, s.APICMode, strings.Join(m.Want, " or "))
	case m.IOMMU && s.IRQRemap == "":
		return fmt.Errorf("--x2apic=%s: the kernel did not enable interrupt remapping", m.Name)
	case !m.IOMMU && s.IRQRemap != "":
		return fmt.Errorf("--x2apic=%s: the kernel enabled interrupt remapping with no remapping unit", m.Name)
	case s.CPUsUp != cpus:
		return fmt.Errorf("only %d of %d CPUs came online", s.CPUsUp, cpus)
	}
	return nil
}
