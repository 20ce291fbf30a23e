package vmm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/devices"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/internal/tscclock"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/loader"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/routing"
	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vioapic"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/xstate"
)

// Platform addresses below 1 MiB... and the ones KVM needs for real mode on
// Intel hosts, placed like QEMU's, just under the BIOS at the top of 4 GiB.
const (
	tssAddr         = 0xFFFBD000
	identityMapAddr = 0xFFFBC000

	PortSerial    = 0x3F8
	PortDebugExit = 0xF4
	PortFwCfg     = 0x510
	PortTestDev   = 0x2000
	PortMark      = 0x660
	PortMSITest   = 0x2100
)

// VM is one virtual machine ready to run.
type VM struct {
	cfg   Config
	sys   *kvm.System
	kvm   *kvm.VM
	mem   *memory.Memory
	apics *vlapic.Bus
	cpus  []*vcpu.VCPU
	kvcpu []*kvm.VCPU
	// restoring counts the restored vCPUs that have not loaded their
	// state yet (restoredVCPU); at 0 the devices start and restoredAll
	// closes, and the vCPUs go on.
	restoring   atomic.Int32
	restoredAll chan struct{}
	acct        *accounting.VM
	// obs is the LAPICs' and vCPUs' observer, counting into acct; it
	// traces the PV send-IPI's and the devices' interrupts too.
	obs   *accounting.Observer
	clock *hostClock
	// stamps is the TSC clock of the accounting's latency stamps and of
	// the vCPUs' halt timing (package tscclock says why not hostClock).
	stamps *tscclock.Clock
	// bus routes every PIO, MMIO and MSR exit (and builds the MSR
	// filter); complete when New returns, read-only from then on.
	bus  exitbus.Bus
	plat *routing.Platform
	// kvmLAPICs carries device interrupts into KVM's LAPICs under
	// --lapic=kvm (Config.LAPIC); nil otherwise, and apics is then set.
	kvmLAPICs *routing.KVMLAPICs
	// smm: guest RAM is mapped in KVM's SMM address space as well
	// (mapSMM), so a vCPU that takes an SMI on either LAPIC enters SMM.
	smm bool
	// pausing: a Pause is in progress (pause.go); one at a time.
	pausing atomic.Bool
	// kstats are the vCPUs' KVM statistics (KVM_GET_STATS_FD), opened
	// with them under --lapic=kvm; nil otherwise. Reading one is a
	// pread, safe from any thread.
	kstats []*kvm.Stats
	pv     pvUnits
	serial *devices.Serial
	// early is the early console (earlycon.go); console is what every
	// other console device writes to: cfg.Console after the early
	// console's queued bytes. Set in New.
	early   *earlyConsole
	console io.Writer
	fwcfg   *devices.FwCfg // gets the exit bus map once the bus is complete (New)
	// pci is the PCI bus and its virtio devices; nil when the
	// configuration asks for no PCI device (Config.wantsPCI).
	pci *pciDevices
	// ioeventfds: KVM signals an eventfd for an MMIO write without an
	// exit on this host (hostprobe's measurement): virtio notifies use it.
	ioeventfds bool
	pm         *devices.ACPIPM // the PM registers and reset control (installACPI)
	linux      bool            // the kernel is Linux (else Multiboot)
	// doorbell: the SYSCALL doorbell is offered (Config.SyscallDoorbell
	// resolved against this host).
	doorbell bool
	// tscDeadline: CPUID advertises TSC-deadline mode (Config.TSCDeadline
	// resolved against the host probe). Set by New.
	tscDeadline bool
	// haltPoll is every vCPU's halt-polling policy (HaltPolling).
	haltPoll haltpoll.Policy

	done     chan struct{}
	stopOnce sync.Once
	status   int
	how      string
	err      error
	// abandoned: Run returned with vCPU threads still inside KVM_RUN
	// (StopGrace). Written by Run before it returns; Close reads it, after.
	abandoned bool
}

// StopGrace is how long Run kicks the vCPUs after the VM stopped before it
// gives up on those still inside KVM_RUN: a VM whose vCPUs do not come back
// (a kick lost below govmm) must end at its own timeout, with a dump, and
// never outlive the test or command that runs it.
var StopGrace = 10 * time.Second

// VCPUYieldEvery is how long a vCPU goroutine may run between yields to
// Go's scheduler (vcpu.Config.YieldEvery): under the 10 ms after which Go's
// sysmon would take the vCPU thread's P at every KVM_RUN (vcpu/loop_yield.go),
// with a margin for a host TSC whose rate is not quite the kernel's. Each
// yield of a locked goroutine costs three thread switches, so the longer
// the better below that: in the nested AMD-V host (x2APIC round trips,
// two rounds), every 5 ms 8,760-8,790 context switches per 4,000 round
// trips, every 8 ms 7,070-7,160, every 9 ms 6,670-7,550, every 20 ms
// 15,700-16,000 (sysmon's retakes) (docs/exit-cost.md).
const VCPUYieldEvery = 8 * time.Millisecond

// Result is how a VM ended.
type Result struct {
	// Status is the guest's exit status: (code << 1) | 1 from the debug-exit
	// port, or -1 when the guest did not end through it.
	Status int
	// How says how the guest ended: "debug-exit", "poweroff", "reboot",
	// "error" or "timeout", or the reason given to Stop.
	How      string
	Err      error
	Duration time.Duration
}

// New creates the VM: KVM objects, memory, APICs, devices, and the loaded
// kernel. Errors read as one sentence for the user.
func New(cfg Config) (vm *VM, err error) {
	if cfg.KVMPath == "" {
		cfg.KVMPath = "/dev/kvm"
	}
	if cfg.MemSize == 0 {
		cfg.MemSize = DefaultMemSize
	}
	if cfg.Console == nil {
		cfg.Console = os.Stdout
	}
	if cfg.AVIC {
		cfg.PVEOI = true
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sys, err := kvm.Open(cfg.KVMPath)
	if err != nil {
		return nil, err
	}
	maxCPUs := sys.CheckExtension(kvm.CapMaxVCPUs)
	if maxCPUs == 0 {
		maxCPUs = sys.CheckExtension(kvm.CapNRVCPUs)
	}
	if err := cfg.checkHost(maxCPUs); err != nil {
		sys.Close()
		return nil, err
	}
	doorbell := cfg.SyscallDoorbell.enabled()
	for _, c := range []struct {
		cap  int
		name string
	}{{kvm.CapX86UserSpaceMSR, "KVM_CAP_X86_USER_SPACE_MSR"}, {kvm.CapX86MSRFilter, "KVM_CAP_X86_MSR_FILTER"},
		{kvm.CapImmediateExit, "KVM_CAP_IMMEDIATE_EXIT"}, {kvm.CapSyncRegs, "KVM_CAP_SYNC_REGS"}} {
		if sys.CheckExtension(c.cap) == 0 {
			sys.Close()
			return nil, fmt.Errorf("%w: this host's KVM lacks %s", kvm.ErrNoKVM, c.name)
		}
	}
	host, _ := Host() // no answers (no probe): TSC deadline only if forced on
	v := &VM{cfg: cfg, sys: sys, acct: accounting.NewVM(cfg.CPUs), done: make(chan struct{}), status: -1, doorbell: doorbell,
		ioeventfds:  host.IOEventFDMMIO,
		tscDeadline: cfg.TSCDeadline.Resolve(host.TSCDeadlineReaches)}
	if cfg.LAPIC == LAPICKVM {
		// KVM's LAPIC has the TSC-deadline timer where KVM says so.
		v.tscDeadline = cfg.TSCDeadline.Resolve(sys.CheckExtension(kvm.CapTSCDeadlineTimer) != 0)
	}
	v.acct.Delivery, v.acct.LAPIC = cfg.Delivery(), cfg.LAPIC.String()
	v.haltPoll, v.acct.HaltPoll = haltPolling(cfg.HaltPoll, cfg.CPUs, hostCPUs())
	if cfg.LAPIC == LAPICKVM {
		v.haltPoll, v.acct.HaltPoll = haltpoll.Policy{}, "KVM's own (the kvm module's halt_poll_ns)"
	}
	defer func() {
		if err != nil {
			v.Close()
		}
	}()
	vm = v
	if vm.kvm, err = sys.CreateVM(); err != nil {
		return nil, err
	}
	if err = vm.setupKVM(); err != nil {
		return nil, err
	}
	if vm.mem, err = memory.New(cfg.MemSize); err != nil {
		return nil, err
	}
	for i, r := range vm.mem.Regions {
		if err = vm.kvm.SetUserMemoryRegion(uint32(i), r.GPA, r.Host); err != nil {
			return nil, err
		}
	}
	if err = vm.mapSMM(); err != nil {
		return nil, err
	}
	var boot *vcpu.EntryState
	if cfg.restore == nil {
		if boot, err = vm.loadKernel(); err != nil {
			return nil, fmt.Errorf("cannot load %s: %w", kernelName(cfg.KernelPath), err)
		}
	} else {
		vm.linux = cfg.restore.cfg.Linux
	}
	if w, ok := cfg.Console.(AccountingWatcher); ok {
		w.WatchAccounting(vm.acct)
	}
	if err = vm.createVCPUs(boot); err != nil {
		return nil, err
	}
	if err = vm.setupEarlyCon(uint32(len(vm.mem.Regions))); err != nil {
		return nil, err
	}
	if err = vm.setupDevices(); err != nil {
		return nil, err
	}
	if err = vm.installACPI(); err != nil {
		return nil, fmt.Errorf("cannot build the ACPI tables: %w", err)
	}
	if cfg.wantsPCI() {
		if err = vm.setupPCI(vm.pm); err != nil {
			return nil, fmt.Errorf("cannot set up the PCI devices: %w", err)
		}
	}
	if err = vm.kvm.SetMSRFilter(msrFilter(&vm.bus)); err != nil {
		return nil, err
	}
	// The complete map, for guests that target what govmm serves (the
	// in-guest fuzzer, guest/baremetal/fuzz.c).
	if _, err = vm.fwcfg.AddFile(exitbus.MapFileName, exitbus.EncodeMap(vm.bus.Map())); err != nil {
		return nil, err
	}
	if cfg.restore != nil {
		if err = vm.loadSnapshot(cfg.restore); err != nil {
			return nil, err
		}
	}
	return vm, nil
}

// setupKVM routes the APIC to user space: with no in-kernel irqchip KVM
// already sends x2APIC MSRs (0x800-0x8FF) out as "invalid" accesses; the
// MSR filter, installed once the exit bus is complete (New, msrFilter),
// adds the MSRs KVM knows that govmm claims (TSC deadline, which KVM would
// silently drop; APIC_BASE, so that govmm answers illegal transitions with
// #GP; the PV MSRs).
func (vm *VM) setupKVM() error {
	if err := vm.kvm.EnableCap(kvm.CapX86UserSpaceMSR,
		kvm.MSRExitReasonInval|kvm.MSRExitReasonUnknown|kvm.MSRExitReasonFilter); err != nil {
		return err
	}
	// No PMU for the guest where KVM can switch it off (its overflow
	// interrupts need KVM's in-kernel APIC); CPUID hides it everywhere.
	if vm.sys.CheckExtension(kvm.CapPMUCapability) != 0 {
		if err := vm.kvm.EnableCap(kvm.CapPMUCapability, kvm.PMUCapDisable); err != nil {
			return err
		}
	}
	if err := vm.kvm.SetIdentityMapAddr(identityMapAddr); err != nil {
		return err
	}
	if err := vm.kvm.SetTSSAddr(tssAddr); err != nil {
		return err
	}
	if vm.cfg.LAPIC == LAPICKVM {
		// KVM's LAPICs, the IOAPIC's pins reserved as GSI routes: before
		// any vCPU exists, which KVM_CAP_SPLIT_IRQCHIP requires.
		return vm.kvm.EnableSplitIRQChip(vioapic.Pins, vm.cfg.X2APIC == X2APICOn)
	}
	return nil
}

// kernelName names the kernel in an error about loading it.
func kernelName(path string) string {
	if path == "" {
		return "the kernel"
	}
	return "the kernel " + path
}

// loadKernel loads a Multiboot kernel, else a Linux bzImage or vmlinux,
// and returns the BSP's entry state.
func (vm *VM) loadKernel() (*vcpu.EntryState, error) {
	mb, err := loader.LoadMultiboot(vm.mem, vm.cfg.Kernel, loader.MultibootCmdline(vm.cfg.KernelPath, vm.cfg.Cmdline), vm.cfg.Modules)
	if err == nil {
		return &vcpu.EntryState{
			Regs:  kvm.Regs{RAX: uint64(mb.EAX), RBX: uint64(mb.InfoAddr), RIP: uint64(mb.Entry), RFLAGS: 2},
			Sregs: vcpu.Flat32,
		}, nil
	}
	if !errors.Is(err, loader.ErrNotMultiboot) {
		return nil, err
	}
	opt := loader.LinuxOptions{Cmdline: vm.cfg.Cmdline, Initrd: vm.cfg.Initrd, RSDPAddr: rsdpAddr, Decompress: !vm.cfg.RunDecompressor}
	l, err := loader.LoadLinux(vm.mem, vm.cfg.Kernel, opt)
	if errors.Is(err, loader.ErrUnsupportedPayload) {
		// A payload govmm cannot decompress (LZO, say): the bzImage's own
		// decompressor can, only slower where KVM interprets guest code.
		vm.log().Warn(err.Error() + ": running the bzImage's own decompressor instead")
		opt.Decompress = false
		l, err = loader.LoadLinux(vm.mem, vm.cfg.Kernel, opt)
	}
	if errors.Is(err, loader.ErrNotLinux) {
		return nil, errors.New("the image is neither a Multiboot kernel (no Multiboot header in its first 8 KiB) nor a Linux bzImage or vmlinux")
	}
	if err != nil {
		return nil, err
	}
	vm.linux = true
	return &vcpu.EntryState{
		Regs:  kvm.Regs{RSI: l.ZeroPage, RIP: l.Entry, RFLAGS: 2},
		Sregs: vcpu.Long64(l.PML4, l.GDT, loader.GDTLimit),
	}, nil
}

func (vm *VM) createVCPUs(boot *vcpu.EntryState) error {
	supported, err := vm.sys.SupportedCPUID()
	if err != nil {
		return err
	}
	n := vm.cfg.CPUs
	vm.kvcpu = make([]*kvm.VCPU, n)
	opts := cpuidOptions{x2apic: vm.cfg.X2APIC == X2APICOn, tscDeadline: vm.tscDeadline}
	for i := range n {
		if vm.kvcpu[i], err = vm.kvm.CreateVCPU(i); err != nil {
			return err
		}
	}
	// What the PV units show in CPUID does not change the leaves read
	// here: the XSAVE layout and MAXPHYADDR are vCPU 0's, the same for
	// every vCPU.
	table := cpuidFor(supported, 0, n, opts)
	var layout *xstate.Layout
	if vm.sys.CheckExtension(kvm.CapXSAVE) != 0 && vm.sys.CheckExtension(kvm.CapXCRs) != 0 {
		layout = xstateLayout(table)
	}
	physAddrBits := 0
	if e, ok := lookupCPUID(table, 0x80000008, 0); ok {
		physAddrBits = int(e.EAX & 0xFF) // MAXPHYADDR
	}
	if vm.clock, err = newHostClock(vm.kvcpu[0]); err != nil {
		return err
	}
	vm.stamps = tscclock.New(vm.clock.tscHz)
	vm.obs = accounting.NewObserver(vm.acct, vm.stamps)
	vm.cpus = make([]*vcpu.VCPU, n) // filled below, before anything is delivered
	if vm.cfg.restore != nil {
		vm.restoring.Store(int32(n))
		vm.restoredAll = make(chan struct{})
	}
	var delivery routing.Delivery
	if vm.cfg.LAPIC == LAPICKVM {
		vm.kvmLAPICs = routing.NewKVMLAPICs(vm.kvm, n, vm.deliveryRefused)
		delivery = vm.kvmLAPICs
	} else {
		sink := vcpu.Set(vm.cpus)
		vm.apics = vlapic.NewBus(n, vm.clock, &sink, vlapic.Options{
			TSCHz: vm.clock.tscHz, BusHz: 1e9, X2APIC: vm.cfg.X2APIC == X2APICOn, AVIC: vm.cfg.AVIC, PhysAddrBits: physAddrBits,
			Observer: vm.obs})
		delivery = vm.apics
	}
	vm.plat = routing.NewPlatform(delivery, vm.mem, platformObserver{&vm.acct.Platform, vm.obs}, vm.cfg.IOMMU, vm.cfg.X2APIC == X2APICOn)
	vm.pv = vm.newPVUnits()
	if vm.apics != nil {
		if err := routing.RegisterLAPICs(&vm.bus, vm.apics); err != nil {
			return err
		}
	}
	if err := vm.plat.Register(&vm.bus); err != nil {
		return err
	}
	if err := vm.pv.register(&vm.bus); err != nil {
		return err
	}
	opts.pv = vm.pv.leaves()
	var signature uint32 // CPUID.1 EAX, RDX after INIT
	if e, ok := lookupCPUID(table, 1, 0); ok {
		signature = e.EAX
	}
	for i, c := range vm.kvcpu {
		if err := c.SetCPUID(cpuidFor(supported, i, n, opts)); err != nil {
			return err
		}
	}
	// After KVM_SET_CPUID2: KVM takes EXTD in APIC_BASE only from a vCPU
	// whose CPUID shows x2APIC (kvm_set_apic_base's reserved bits).
	setBase := func(i int, base uint64) error { return vm.kvcpu[i].SetMSR(vlapic.MSRAPICBase, base) }
	if err := x2APICHandoff(n, vm.apics, vm.cfg.X2APIC == X2APICOn, vm.cfg.X2APICAtReset, setBase); err != nil {
		return err
	}
	if err := vm.openKVMStats(); err != nil {
		return err
	}
	// The kernel's symbols name RIPs in SIGUSR2 dumps. A table that does
	// not parse names nothing: it must not stop a kernel that loaded.
	syms := sync.OnceValue(func() *ksyms.Table {
		if vm.cfg.Symbols != nil {
			return vm.cfg.Symbols
		}
		t, _ := ksyms.FromELF(vm.cfg.Kernel)
		return t
	})
	for i := range n {
		cfg := vcpu.Config{KVM: vm.kvcpu[i], Counters: &vm.acct.CPUs[i],
			Bus: &vm.bus, Clock: vm.clock, HaltClock: vm.stamps, Mem: vm.mem, Done: vm.done, Symbols: syms,
			HaltPoll: vm.haltPoll, Signature: signature, YieldEvery: vm.clock.tscHz / uint64(time.Second/VCPUYieldEvery),
			RawRun: vm.cfg.KVMRun.raw(n, hostCPUs()),
			Pin:    len(vm.cfg.CPUAffinity) > 0, SMM: vm.smm}
		if cfg.Pin {
			cfg.HostCPU = vm.cfg.CPUAffinity[i%len(vm.cfg.CPUAffinity)]
		}
		if vm.apics != nil {
			cfg.LAPIC, cfg.PVEOI = vm.apics.LAPIC(i), vm.pv.eoi.CPU(i)
		} else {
			cfg.InKernel, cfg.IOAPICEOI = true, vm.kvmLAPICs.EOI
		}
		cfg.XState, cfg.XSAVESize = layout, vm.sys.CheckExtension(kvm.CapXSAVE2)
		if i == 0 {
			cfg.Boot = boot
		}
		if rs := vm.cfg.restore; rs != nil {
			cfg.Resume, cfg.Restored = &rs.cpus[i], vm.restoredVCPU
		}
		vm.cpus[i] = vcpu.New(i, cfg)
	}
	return nil
}

// mapSMM maps guest RAM in KVM's SMM address space too, where the host's
// KVM has one. A vCPU in SMM sees only that address space
// (kvm_memslots_for_spte_role); left empty, its first instruction fetch
// at SMBASE + 0x8000 is an MMIO access KVM cannot emulate, and the VM
// ends (fuzz.elf's self-SMI on KVM's LAPIC did just that). govmm has no
// firmware and no SMRAM of its own: as on a machine whose chipset does
// not close SMRAM, the CPU in SMM sees the RAM the OS sees, saves its
// state at SMBASE + 0xFE00 and runs what is at SMBASE + 0x8000.
func (vm *VM) mapSMM() error {
	if vm.sys.CheckExtension(kvm.CapX86SMM) <= 0 || vm.sys.CheckExtension(kvm.CapMultiAddressSpace) < 2 {
		return nil
	}
	for i, r := range vm.mem.Regions {
		if err := vm.kvm.SetUserMemoryRegion(kvm.SMMAddressSpace|uint32(i), r.GPA, r.Host); err != nil {
			return fmt.Errorf("mapping RAM for SMM: %w", err)
		}
	}
	vm.smm = true
	return nil
}

func (vm *VM) setupDevices() error {
	vm.serial = devices.NewSerial(vm.console)
	vm.fwcfg = devices.NewFwCfg(vm.cfg.CPUs, vm.cfg.MemSize)
	vm.serial.IRQ = func(level bool) { vm.plat.SetLine(4, level) } // COM1 is ISA IRQ 4
	return vm.registerPorts([]portDevice{
		{PortSerial, 8, "COM1 serial", exitcause.PIOSerial, vm.serial},
		{PortDebugExit, 4, "debug exit", exitcause.PIODebugExit, &devices.DebugExit{Exit: func(status int) { vm.end("debug-exit", status) }}},
		{PortFwCfg, 2, "fw_cfg", exitcause.PIOFwCfg, vm.fwcfg},
		{PortTestDev, 24, "pc-testdev", exitcause.PIOTestDev, &devices.TestDev{SetLine: vm.plat.SetLine}},
		{PortMSITest, 16, "MSI test device", exitcause.PIOMSITestDev, &devices.MSITestDev{Send: vm.plat.SendMSI}},
		{PortMark, devices.MarkerPorts, "accounting marker", exitcause.PIOMark,
			devices.NewMarker(vm.cfg.CPUs, vm.acct.Mark, func(cpu int) devices.SectionCounts { return devices.SectionCounts(vm.acct.LastSection(cpu)) }, vm.acct.InjectedVector,
				vm.halted)},
	})
}

// openKVMStats opens every vCPU's KVM statistics (kstats). Under
// --lapic=kvm the sections record them (accounting.VM.KVM): KVM serves
// most of the exits there, and without its statistics a section would
// count only govmm's share, so a host without them is refused.
func (vm *VM) openKVMStats() error {
	if vm.cfg.LAPIC != LAPICKVM {
		return nil // govmm's LAPIC: its own counts (and no fd per vCPU more)
	}
	if vm.sys.CheckExtension(kvm.CapBinaryStatsFD) == 0 {
		return fmt.Errorf("%w: this host's KVM lacks KVM_CAP_BINARY_STATS_FD, which --lapic=kvm needs to count the exits KVM serves", kvm.ErrNoKVM)
	}
	vm.kstats = make([]*kvm.Stats, len(vm.kvcpu))
	for i, c := range vm.kvcpu {
		s, err := c.StatsFD()
		if err != nil {
			return err
		}
		vm.kstats[i] = s
	}
	vm.acct.KVM = vm.sampleKVM
	return nil
}

// sampleKVM reads every vCPU's statistics that a section records.
func (vm *VM) sampleKVM() ([]accounting.KVMCounts, error) {
	out := make([]accounting.KVMCounts, len(vm.kstats))
	names := accounting.KVMStatNames()
	for i, s := range vm.kstats {
		vals, err := s.Read()
		if err != nil {
			return nil, fmt.Errorf("vCPU %d: %w", i, err)
		}
		for j, name := range names {
			out[i][j] = vals[name]
		}
	}
	return out, nil
}

// halted says whether vCPU cpu is halted: in govmm's loop (its HLT exit
// counted), or under --lapic=kvm inside KVM, blocked in its halt (KVM's
// instant statistic "blocking", which another thread may read).
func (vm *VM) halted(cpu int) bool {
	if vm.apics != nil {
		return vm.cpus[cpu].State() == vcpu.StateHalted
	}
	// A KVM without the statistic (before Linux 5.16) answers yes: the
	// guest's own pacing (ipi.elf's gap) is then all there is.
	v, err := vm.kstats[cpu].Value("blocking")
	return err != nil || v != 0
}

// deliveryRefused reports an interrupt KVM's LAPICs refused (--lapic=kvm):
// the VM stops with the ioctl's error, as a vCPU's refused ioctl does.
func (vm *VM) deliveryRefused(err error) {
	vm.stop("error", -1, fmt.Errorf("device interrupt into KVM's LAPIC: %w", err))
}

// portDevice is a device's claim on I/O ports.
type portDevice struct {
	base, n uint16
	name    string
	cause   exitcause.Cause
	dev     devices.PortDevice
}

func (vm *VM) registerPorts(ports []portDevice) error {
	for _, p := range ports {
		if err := vm.bus.Register(exitbus.Range{Space: exitbus.PIO, Base: uint64(p.base), Len: uint64(p.n), Name: p.name,
			Cause: exitbus.Fixed(p.cause), Handler: devices.Port(p.dev)}); err != nil {
			return err
		}
	}
	return nil
}

// Map lists the VM's exit bus: every PIO, MMIO and MSR range and what
// serves it.
func (vm *VM) Map() []exitbus.Entry { return vm.bus.Map() }

// Stop ends a running VM from outside the guest (the user quit, a signal):
// Run returns with Result.How set to how, Status -1 and no error. Safe to
// call from any goroutine; only the first end of a VM counts.
func (vm *VM) Stop(how string) { vm.stop(how, -1, nil) }

// end ends the VM the way the guest asked.
func (vm *VM) end(how string, status int) { vm.stop(how, status, nil) }

// stop ends the VM once: the first caller's status and error win.
func (vm *VM) stop(how string, status int, err error) {
	vm.stopOnce.Do(func() {
		vm.how, vm.status, vm.err = how, status, err
		close(vm.done)
		for _, c := range vm.cpus {
			c.Stop()
		}
	})
}

// startInput starts feeding the console input (if any) to the virtio
// console, or else to the serial port.
func (vm *VM) startInput() {
	if vm.cfg.ConsoleInput == nil {
		return
	}
	if vm.pci != nil && vm.pci.console != nil {
		go pumpInput(vm.cfg.ConsoleInput, vm.pci.console.Input, vm.done)
	} else {
		go vm.serial.Pump(vm.cfg.ConsoleInput) // an input error ends input, as EOF does
	}
}

// Run starts every vCPU and waits until the guest ends or timeout passes
// (0: no limit).
func (vm *VM) Run(timeout time.Duration) Result {
	start := time.Now()
	vm.startInput()
	drained := make(chan struct{})
	go func() { vm.early.drainUntil(vm.done); close(drained) }()
	raiseProcs(len(vm.cpus))
	loops := make([]<-chan struct{}, len(vm.cpus))
	for i, c := range vm.cpus {
		done := make(chan struct{})
		loops[i] = done
		go func() {
			defer close(done)
			if err := c.Run(); err != nil {
				vm.stop("error", -1, err)
			}
		}()
	}
	if limit := vm.cfg.Watchdog; limit >= 0 {
		if limit == 0 {
			limit = defaultWatchdogFor(len(vm.cpus), runtime.NumCPU())
		}
		go vm.watch(limit)
	}
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			vm.stop("timeout", -1, fmt.Errorf("the guest did not end within %v", timeout))
		})
		defer t.Stop()
	}
	<-vm.done
	vm.serial.StopInput()
	stuck := awaitLoops(loops, func() {
		for _, c := range vm.cpus {
			c.Notify()
		}
	}, StopGrace)
	<-drained
	vm.early.drain() // everything left, what the vCPUs queued as they stopped included
	res := Result{Status: vm.status, How: vm.how, Err: vm.err, Duration: time.Since(start)}
	if len(stuck) > 0 {
		vm.abandoned = true
		for _, i := range stuck {
			var dump strings.Builder
			vm.cpus[i].DumpNow(&dump)
			vm.log().Error(fmt.Sprintf("vCPU %d (%s) did not leave the guest within %v after the VM stopped", i, vm.cpus[i].State(), StopGrace),
				"state", dump.String())
		}
		why := "the VM stopped"
		if vm.err != nil {
			why = vm.err.Error()
		}
		res.Err = fmt.Errorf("%s; then vCPU %v did not leave KVM_RUN within %v though kicked (a kick lost below govmm): abandoned", why, stuck, StopGrace)
	}
	return res
}

// awaitLoops kicks until every vCPU loop has returned (its channel closed)
// or grace has passed, and returns the indexes of the loops still running.
// Kicks repeat: one can race a vCPU re-entering the guest.
func awaitLoops(loops []<-chan struct{}, kick func(), grace time.Duration) []int {
	deadline := time.Now().Add(grace)
	for {
		var running []int
		for i, l := range loops {
			select {
			case <-l:
			default:
				running = append(running, i)
			}
		}
		if len(running) == 0 || !time.Now().Before(deadline) {
			return running
		}
		kick()
		select {
		case <-loops[running[0]]:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Dump prints the exits so far by cause to w and asks every vCPU to print
// its state and LAPIC there (see vcpu.RequestDump): each vCPU prints from
// its own thread, as soon as it exits or is woken, so w takes writes from
// several goroutines, after Dump has returned.
func (vm *VM) Dump(w io.Writer) {
	for _, c := range vm.cpus {
		c.RequestDump(w)
	}
	r := vm.acct.Report()
	fmt.Fprintf(w, "exits so far: %d; injected %d\n", r.Total.Exits, r.Total.Injected)
	for c, n := range r.Total.ByCause {
		fmt.Fprintf(w, "  %s %d\n", c, n)
	}
}

// Accounting returns the VM's exit accounting.
func (vm *VM) Accounting() *accounting.VM { return vm.acct }

// APICs returns the local APICs.
func (vm *VM) APICs() *vlapic.Bus { return vm.apics }

// VCPUs returns the vCPUs.
func (vm *VM) VCPUs() []*vcpu.VCPU { return vm.cpus }

// KVMStats sums KVM's own per-vCPU statistics of every vCPU, by name.
func (vm *VM) KVMStats() (map[string]uint64, error) {
	sum := map[string]uint64{}
	for _, c := range vm.kvcpu {
		s, err := c.StatsFD()
		if err != nil {
			return nil, err
		}
		vals, err := s.Read()
		s.Close()
		if err != nil {
			return nil, err
		}
		for k, v := range vals {
			sum[k] += v
		}
	}
	return sum, nil
}

// pumpInput copies console input to a virtio console until it ends or
// the VM does (the console keeps what the guest has not taken yet).
func pumpInput(r io.Reader, in func([]byte), done <-chan struct{}) {
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			in(append([]byte(nil), buf[:n]...))
		}
		select {
		case <-done:
			return
		default:
		}
		if err != nil {
			return
		}
	}
}

// Close releases everything the VM holds.
func (vm *VM) Close() {
	if vm.abandoned {
		// A vCPU thread is still inside KVM_RUN: its kvm_run page and the
		// guest's memory must stay mapped for when (if) it returns. The
		// process is about to report the failure; leave them to its exit.
		return
	}
	// A VM closed without having run still ends: its vCPUs' goroutines
	// that wait for the end (vcpu.New) return.
	vm.stop("closed", -1, nil)
	vm.pci.close()
	for _, c := range vm.kvcpu {
		if c != nil {
			c.Close()
		}
	}
	for _, s := range vm.kstats {
		if s != nil {
			s.Close()
		}
	}
	if vm.kvm != nil {
		vm.kvm.Close()
	}
	if vm.mem != nil {
		vm.mem.Close()
	}
	vm.early.release()
	vm.sys.Close()
}

// SyscallDoorbell reports whether the VM offers the SYSCALL doorbell.
func (vm *VM) SyscallDoorbell() bool { return vm.doorbell }

// TSCDeadline reports whether the VM's CPUID advertises TSC-deadline mode.
func (vm *VM) TSCDeadline() bool { return vm.tscDeadline }

// x2APICHandoff does what platform firmware does for a machine with an
// APIC ID above 254 (OVMF's MpInitLib: "Force x2APIC mode because Initial
// APIC ID is greater than 255"; the x2APIC specification asks the BIOS to
// hand such a machine over in x2APIC mode): every LAPIC leaves reset in
// x2APIC mode. Left in xAPIC mode, CPU i answers to the 8-bit xAPIC ID
// i & 0xFF, so CPU 257 took the INIT and SIPIs Linux sent to APIC ID 1
// (two CPUs ran CPU 1's start-up code: a 288-vCPU boot died there), and
// Linux, which parses the MADT before it enables x2APIC, ignored the
// x2APIC entries of IDs 255 and up ("Allowing 255 CPUs"). Found in x2APIC
// mode at boot, Linux uses the x2APIC driver from the MADT on. INIT keeps
// the mode (SDM 11.12.5.1), so the APs stay in x2APIC through their
// start-up. x2 says whether x2APIC is offered, always whether to hand
// over in x2APIC mode at any size (Config.X2APICAtReset); kvmBase hands
// CPU i's new APIC_BASE to KVM's copy (as routing's APIC_BASE handler does),
// which with KVM's LAPIC (apics nil) is the only one. n is the VM's vCPUs.
func x2APICHandoff(n int, apics *vlapic.Bus, x2, always bool, kvmBase func(i int, base uint64) error) error {
	if !x2 || n <= 255 && !always {
		return nil
	}
	for i := range n {
		// KVM's LAPIC (apics nil, --lapic=kvm): its APIC_BASE is the only
		// copy, at its reset value.
		base := uint64(vlapic.DefaultBase) | vlapic.BaseEN | vlapic.BaseEXTD
		if i == 0 {
			base |= vlapic.BaseBSP
		}
		if apics != nil {
			a := apics.LAPIC(i)
			base = a.Base() | vlapic.BaseEXTD
			if err := a.SetBase(base); err != nil {
				return fmt.Errorf("vCPU %d: x2APIC at hand-off: %w", i, err)
			}
		}
		if err := kvmBase(i, base); err != nil {
			return fmt.Errorf("vCPU %d: APIC_BASE %#x at hand-off, KVM's copy: %w", i, base, err)
		}
	}
	return nil
}
