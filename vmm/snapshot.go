// This file holds Snapshot and Restore: a running VM saved to a directory
// (package snapshot's form) inside a pause, and a new VM built from one
// that goes on where the guest stopped. What a snapshot holds: the VM's
// configuration, guest memory, every vCPU's state (KVM's, and its loop's:
// running, halted, waiting for SIPI, with the events it had latched),
// the LAPICs (govmm's with their timers as time remaining, or KVM's
// register pages), PV EOI's MSRs, the IOAPIC, the VT-d remapping unit,
// the UART, KVM's clock, the SYSCALL doorbell's registrations, and the
// PCI functions with their virtio transports (each queue where its device
// stood) and devices (the console's undelivered input; the disk image,
// flushed, named in the configuration).
//
// A snapshot taken on one LAPIC restores on the other (RestoreOptions.LAPIC,
// govmm restore --lapic): vcpu.OnKVMLAPIC and vcpu.OnGovmmLAPIC move each
// vCPU's state across (the handover).
//
// The virtio devices are suspended for the save, between requests, after
// the vCPUs have parked and before anything is saved: a request completing
// during the save would change a LAPIC already written. A restored VM
// starts them once every vCPU has its state back (restoredVCPU).

package vmm

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/govmm/govmm/devices"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/pci"
	"github.com/govmm/govmm/snapshot"
	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vintremap"
	"github.com/govmm/govmm/vioapic"
	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/console"
	"github.com/govmm/govmm/vlapic"
)

// snapConfig is the part of Config a snapshot carries: what builds the
// same machine again. The kernel image is not needed (memory holds it).
type snapConfig struct {
	CPUs            int
	MemSize         uint64
	X2APIC          X2APIC
	LAPIC           LAPICKind
	PVIPI           bool
	AVIC            bool
	SyscallDoorbell Doorbell
	Cmdline         string
	KernelPath      string // for the report and symbol names
	TSCDeadline     hostprobe.Setting
	HaltPoll        time.Duration
	X2APICAtReset   bool
	IOMMU           bool
	PVEOI           bool
	VirtioConsole   bool
	Disk            Disk
	DiskSize        int64 // the image's size when saved: a restore refuses another
	Linux           bool  // the guest was loaded as Linux (its boot protocol's conventions)
}

// The snapshot's files.
const (
	snapIOAPIC   = "ioapic.json"
	snapSerial   = "serial.json"
	snapFwCfg    = "fwcfg.json"
	snapClock    = "clock.json"
	snapDoorbell = "doorbell.json"
	snapIOMMU    = "iommu.json"
	snapConsole  = "virtio-console.json"
)

func snapVCPU(i int) string   { return fmt.Sprintf("vcpu-%d.json", i) }
func snapLAPIC(i int) string  { return fmt.Sprintf("lapic-%d.json", i) }
func snapMemory(i int) string { return fmt.Sprintf("memory-%d", i) }
func snapPCI(i int) string    { return fmt.Sprintf("pci-%d.json", i) }

// pciSaved is one PCI function's file: the function and its transport.
type pciSaved struct {
	Name      string
	Function  pci.FunctionSaved
	Transport virtio.TransportSaved
}

// SnapshotInfo describes a snapshot just written.
type SnapshotInfo struct {
	Dir   string
	Bytes int64         // the files' sizes (the memory files' holes included)
	Took  time.Duration // from the pause to the manifest
}

// SnapshotFiles are the files a snapshot of this VM has (the manifest
// aside): what snapshot.Prepare opens ahead for a sandboxed govmm.
func (vm *VM) SnapshotFiles() []string {
	names := []string{snapIOAPIC, snapSerial, snapFwCfg, snapClock, snapDoorbell}
	if vm.plat.RemappingUnit() != nil {
		names = append(names, snapIOMMU)
	}
	if vm.pci != nil {
		for i := range vm.pci.funcs {
			names = append(names, snapPCI(i))
		}
		if vm.pci.console != nil {
			names = append(names, snapConsole)
		}
	}
	for i := range vm.mem.Regions {
		names = append(names, snapMemory(i))
	}
	for i := range vm.cpus {
		names = append(names, snapVCPU(i))
		if vm.apics != nil {
			names = append(names, snapLAPIC(i))
		}
	}
	return names
}

// Snapshot saves the running VM into dir (new, or empty) inside a pause,
// then lets the guest go on. version names the govmm that writes it.
func (vm *VM) Snapshot(dir, version string) (SnapshotInfo, error) {
	w, err := snapshot.Create(dir)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return vm.SnapshotInto(w, dir, version)
}

// SnapshotInto is Snapshot into a writer made already (snapshot.Prepare's,
// in a sandboxed govmm).
func (vm *VM) SnapshotInto(w *snapshot.Writer, dir, version string) (SnapshotInfo, error) {
	defer w.Close()
	start := time.Now()
	p, err := vm.Pause(30 * time.Second)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	defer vm.Resume(p)
	diskSize, err := vm.suspendDevices()
	defer vm.resumeDevices()
	if err != nil {
		return SnapshotInfo{}, err
	}
	if err := vm.writeSnapshot(w, p); err != nil {
		return SnapshotInfo{}, err
	}
	sc := snapConfig{CPUs: vm.cfg.CPUs, MemSize: vm.cfg.MemSize, X2APIC: vm.cfg.X2APIC, LAPIC: vm.cfg.LAPIC, PVIPI: vm.cfg.PVIPI,
		AVIC: vm.cfg.AVIC, SyscallDoorbell: vm.cfg.SyscallDoorbell, Cmdline: vm.cfg.Cmdline, KernelPath: vm.cfg.KernelPath,
		TSCDeadline: vm.cfg.TSCDeadline, HaltPoll: vm.cfg.HaltPoll, X2APICAtReset: vm.cfg.X2APICAtReset, IOMMU: vm.cfg.IOMMU,
		PVEOI: vm.cfg.PVEOI, VirtioConsole: vm.cfg.VirtioConsole, Disk: vm.cfg.Disk, DiskSize: diskSize, Linux: vm.linux}
	if err := w.Finish(sc, version); err != nil {
		return SnapshotInfo{}, err
	}
	return SnapshotInfo{Dir: dir, Bytes: w.Bytes(), Took: time.Since(start)}, nil
}

// writeSnapshot writes every component's file of the paused VM.
func (vm *VM) writeSnapshot(w *snapshot.Writer, p *Paused) error {
	for i, r := range vm.mem.Regions {
		if err := w.WriteMemory(snapMemory(i), r.Host); err != nil {
			return err
		}
	}
	for i := range vm.cpus {
		if err := w.WriteJSON(snapVCPU(i), p.CPUs[i]); err != nil {
			return err
		}
		if vm.apics == nil {
			continue // KVM's LAPIC: its page is in the vCPU's state
		}
		if err := w.WriteJSON(snapLAPIC(i), vm.apics.LAPIC(i).Save()); err != nil {
			return err
		}
	}
	if err := w.WriteJSON(snapIOAPIC, vm.plat.IOAPIC().Save()); err != nil {
		return err
	}
	if err := w.WriteJSON(snapSerial, vm.serial.Save()); err != nil {
		return err
	}
	if err := w.WriteJSON(snapFwCfg, vm.fwcfg.Save()); err != nil {
		return err
	}
	if u := vm.plat.RemappingUnit(); u != nil {
		if err := w.WriteJSON(snapIOMMU, u.Save()); err != nil {
			return err
		}
	}
	if err := w.WriteJSON(snapDoorbell, vm.pv.doorbell.Save()); err != nil {
		return err
	}
	if err := vm.writePCI(w); err != nil {
		return err
	}
	clock, err := vm.kvm.Clock()
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return w.WriteJSON(snapClock, clock)
}

// RestoreOptions are what a restored VM takes from its new process.
type RestoreOptions struct {
	Console      io.Writer // default os.Stdout
	ConsoleInput io.Reader // the guest console's input (nil: none)
	KVMPath      string    // default /dev/kvm
	// LAPIC is the restored VM's LAPIC, when it is to be another than the
	// snapshot's (the handover); nil: the snapshot's.
	LAPIC *LAPICKind
}

// restoring is a snapshot being restored into a VM that New builds.
type restoring struct {
	r    *snapshot.Reader
	cfg  snapConfig
	cpus []vcpu.Saved
}

// Restore builds a VM from the snapshot in dir; Run continues the guest
// where it was paused. A snapshot of another format version, or with a
// damaged or missing file, is refused with one line before any KVM object
// is made.
func Restore(dir string, o RestoreOptions) (*VM, error) {
	r, err := snapshot.Open(dir)
	if err != nil {
		return nil, err
	}
	var sc snapConfig
	if err := json.Unmarshal(r.Manifest.Config, &sc); err != nil {
		return nil, fmt.Errorf("snapshot %s: its configuration: %v", dir, err)
	}
	if err := checkSnapDisk(sc); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	lapic := sc.LAPIC
	if o.LAPIC != nil && *o.LAPIC != sc.LAPIC {
		// The guest's PV send-IPI is its LAPIC's: govmm's MSR, or KVM's
		// hypercall (KVM_HC_SEND_IPI), which the other does not serve.
		if sc.PVIPI {
			return nil, fmt.Errorf("snapshot %s: its guest sends IPIs through %s's PV send-IPI (--pv-ipi), which %s's LAPIC does not serve: hand over a VM run without it", dir, sc.LAPIC, *o.LAPIC)
		}
		lapic = *o.LAPIC
	}
	rs := &restoring{r: r, cfg: sc, cpus: make([]vcpu.Saved, max(sc.CPUs, 0))}
	for i := range rs.cpus {
		if err := r.ReadJSON(snapVCPU(i), &rs.cpus[i]); err != nil {
			return nil, err
		}
	}
	cfg := Config{CPUs: sc.CPUs, MemSize: sc.MemSize, X2APIC: sc.X2APIC, LAPIC: lapic, PVIPI: sc.PVIPI, AVIC: sc.AVIC,
		SyscallDoorbell: sc.SyscallDoorbell, Cmdline: sc.Cmdline, KernelPath: sc.KernelPath, TSCDeadline: sc.TSCDeadline,
		HaltPoll: sc.HaltPoll, X2APICAtReset: sc.X2APICAtReset, IOMMU: sc.IOMMU, PVEOI: sc.PVEOI,
		VirtioConsole: sc.VirtioConsole, Disk: sc.Disk,
		Console: o.Console, ConsoleInput: o.ConsoleInput, KVMPath: o.KVMPath, restore: rs}

	return New(cfg)
}

// loadSnapshot puts the snapshot's state into the VM New has built (its
// vCPUs carry their saved states already, which their loops load when they
// start): memory (over the ACPI tables New wrote: the guest's copy is the
// one it has), the LAPICs, the IOAPIC, the UART and KVM's clock.
func (vm *VM) loadSnapshot(rs *restoring) error {
	for i, r := range vm.mem.Regions {
		if err := rs.r.ReadMemory(snapMemory(i), r.Host); err != nil {
			return err
		}
	}
	if err := vm.restoreLAPICs(rs); err != nil {
		return err
	}
	var io vioapic.Saved
	if err := rs.r.ReadJSON(snapIOAPIC, &io); err != nil {
		return err
	}
	if err := vm.plat.IOAPIC().Restore(io); err != nil {
		return err
	}
	if u := vm.plat.RemappingUnit(); u != nil {
		var s vintremap.Saved
		if err := rs.r.ReadJSON(snapIOMMU, &s); err != nil {
			return err
		}
		if err := u.Restore(s); err != nil {
			return err
		}
	}
	var ser devices.SerialSaved
	if err := rs.r.ReadJSON(snapSerial, &ser); err != nil {
		return err
	}
	if err := vm.serial.Restore(ser); err != nil {
		return err
	}
	var fw devices.FwCfgSaved
	if err := rs.r.ReadJSON(snapFwCfg, &fw); err != nil {
		return err
	}
	if err := vm.fwcfg.Restore(fw); err != nil {
		return err
	}
	var entries []uint64
	if err := rs.r.ReadJSON(snapDoorbell, &entries); err != nil {
		return err
	}
	if err := vm.pv.doorbell.Restore(entries); err != nil {
		return err
	}
	if err := vm.restorePCI(rs); err != nil {
		return err
	}
	var clock kvm.ClockData
	if err := rs.r.ReadJSON(snapClock, &clock); err != nil {
		return err
	}
	clock.Flags = 0 // the saved clock value, not the host's realtime pairing
	if err := vm.kvm.SetClock(clock); err != nil {
		return fmt.Errorf("restoring KVM's clock: %w", err)
	}
	return nil
}

// restoreLAPICs gives each vCPU its LAPIC's saved state in the form this
// VM's LAPIC takes: govmm's LAPICs restored here, KVM's register pages in
// the vCPUs' saved states (their loops load them). A snapshot from KVM's
// LAPIC goes through govmm's form on either side, so that what a restore
// into KVM fixes (a fired one-shot timer, vlapic.Saved.KVMPage) is fixed
// whichever LAPIC it was taken on.
func (vm *VM) restoreLAPICs(rs *restoring) error {
	fromKVM, toKVM := rs.cfg.LAPIC == LAPICKVM, vm.cfg.LAPIC == LAPICKVM
	for i := range vm.cpus {
		s := &rs.cpus[i]
		var l vlapic.Saved
		var err error
		if fromKVM {
			*s, l, err = vcpu.OnGovmmLAPIC(*s, vm.clock.tscHz)
		} else {
			err = rs.r.ReadJSON(snapLAPIC(i), &l)
		}
		if err == nil {
			if toKVM {
				*s, err = vcpu.OnKVMLAPIC(*s, l, uint32(i))
			} else {
				err = vm.apics.LAPIC(i).Restore(l)
			}
		}
		if err != nil {
			return fmt.Errorf("vCPU %d's LAPIC (saved on %s's, restored on %s's): %w", i, rs.cfg.LAPIC, vm.cfg.LAPIC, err)
		}
	}
	return nil
}

// suspendDevices stops every virtio device between requests and flushes
// the disk image; it returns the image's size (0: no disk).
func (vm *VM) suspendDevices() (int64, error) {
	if vm.pci == nil {
		return 0, nil
	}
	for _, vf := range vm.pci.funcs {
		vf.t.Suspend()
	}
	if d := vm.pci.disk; d != nil {
		if err := d.Flush(); err != nil {
			return 0, fmt.Errorf("snapshot: flushing the disk image %s: %w", vm.cfg.Disk.Path, err)
		}
		return d.Size(), nil
	}
	return 0, nil
}

// resumeDevices starts the suspended virtio devices again; one that
// cannot start is set DEVICE_NEEDS_RESET (the guest is told) and logged.
func (vm *VM) resumeDevices() {
	if vm.pci == nil {
		return
	}
	for _, vf := range vm.pci.funcs {
		if err := vf.t.Resume(); err != nil {
			vm.log().Error(vf.name+": could not start again after the snapshot (DEVICE_NEEDS_RESET)", "err", err)
		}
	}
}

// writePCI writes each PCI function's file and the console's.
func (vm *VM) writePCI(w *snapshot.Writer) error {
	if vm.pci == nil {
		return nil
	}
	for i, vf := range vm.pci.funcs {
		ts, err := vf.t.Save()
		if err != nil {
			return fmt.Errorf("snapshot: %s: %w", vf.name, err)
		}
		if err := w.WriteJSON(snapPCI(i), pciSaved{Name: vf.name, Function: vf.fn.Save(), Transport: ts}); err != nil {
			return err
		}
	}
	if c := vm.pci.console; c != nil {
		return w.WriteJSON(snapConsole, c.Save())
	}
	return nil
}

// restorePCI puts the PCI functions, their transports (devices left
// suspended) and the console's input back; the devices start once every
// vCPU has its state (restoredVCPU).
func (vm *VM) restorePCI(rs *restoring) error {
	if vm.pci == nil {
		return nil
	}
	for i, vf := range vm.pci.funcs {
		var s pciSaved
		if err := rs.r.ReadJSON(snapPCI(i), &s); err != nil {
			return err
		}
		if s.Name != vf.name {
			return fmt.Errorf("snapshot: PCI function %d is %s, this VM's is %s", i, s.Name, vf.name)
		}
		if err := vf.fn.Restore(s.Function); err != nil {
			return err
		}
		if err := vf.t.Restore(s.Transport); err != nil {
			return fmt.Errorf("%s: %w", vf.name, err)
		}
	}
	if c := vm.pci.console; c != nil {
		var s console.Saved
		if err := rs.r.ReadJSON(snapConsole, &s); err != nil {
			return err
		}
		c.Restore(s)
	}
	return nil
}

// restoredVCPU is each restored vCPU's vcpu.Config.Restored: it returns
// once every vCPU has its state back, and the last one starts the
// devices. No vCPU enters the guest before: on KVM's LAPIC each vCPU
// loads its LAPIC (KVM_SET_LAPIC) on its own thread, and an IPI that one
// already running sent to one still loading was overwritten by the load
// (the nested VT-x host lost storm.elf's wake-up IPI so).
func (vm *VM) restoredVCPU() {
	if vm.restoring.Add(-1) == 0 {
		vm.resumeDevices()
		close(vm.restoredAll)
		return
	}
	select {
	case <-vm.restoredAll:
	case <-vm.done:
	}
}

// checkSnapDisk refuses a snapshot whose disk image is gone or changed
// size since: the guest's file system would not be the one it knew.
func checkSnapDisk(sc snapConfig) error {
	if sc.Disk.Path == "" {
		return nil
	}
	fi, err := os.Stat(sc.Disk.Path)
	if err != nil {
		return fmt.Errorf("its disk image: %w", err)
	}
	if fi.Size() != sc.DiskSize {
		return fmt.Errorf("its disk image %s is %d bytes, %d when saved", sc.Disk.Path, fi.Size(), sc.DiskSize)
	}
	return nil
}
