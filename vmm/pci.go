package vmm

import (
	"fmt"
	"sync"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/acpi"
	"github.com/govmm/govmm/devices"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/pci"
	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/blk"
	"github.com/govmm/govmm/virtio/console"
)

// The PCI host bridge's resources, in the MMIO hole below 4 GiB that
// starts where low RAM ends (memory.LowMemTop), clear of the fixed
// devices from the SYSCALL doorbell page (0xFEB00000) up. The ACPI tables
// announce the same windows (_CRS of PCI0, MCFG).
const (
	pciMMIOBase = memory.LowMemTop // 0xC0000000: BARs
	pciMMIOSize = 0x20000000       // 512 MiB, to 0xDFFFFFFF
	pciECAMBase = 0xE0000000       // bus 0's configuration space, 1 MiB
	pciIOBase   = 0xC000           // I/O BARs, above the legacy ports
	pciIOSize   = 0x4000
)

// virtio's PCI identity (virtio 1.2 §4.1.2): Red Hat's vendor ID, device
// ID 0x1040 + the virtio device type for a modern-only device, revision 1.
const (
	virtioVendor   = 0x1AF4
	virtioDeviceID = 0x1040
)

// The BARs of a virtio function: MSI-X table (at 0) and PBA (at 2 KiB) in a
// 32-bit BAR of their own, the virtio structures in a 64-bit one, as QEMU
// lays out its virtio-pci devices.
const (
	msixBAR   = 1
	virtioBAR = 4
	msixPBA   = 0x800
)

// pciDevices is the VM's PCI bus and the virtio devices on it. Built by
// setupPCI before any vCPU runs; read-only from then on except where a
// field says otherwise.
type pciDevices struct {
	bus     *pci.Bus
	funcs   []*virtioFunction
	bySID   map[uint16]*virtioFunction // the MSI sink's lookup, by requester ID
	console *console.Device
	disk    *blk.Device
}

// virtioFunction is one virtio device on the bus: its PCI function, its
// transport, its interrupt accounting, and the ioeventfds of its notify
// addresses.
type virtioFunction struct {
	name string
	fn   *pci.Function
	t    *virtio.PCITransport
	irqs *accounting.DeviceIRQs

	// mu guards notifyAt: OnBARChange runs on the vCPU thread of the
	// config write that moved the BAR or switched its decode.
	mu       sync.Mutex
	notifyAt uint64 // BAR base the ioeventfds are registered at; 0: none
}

// setupPCI builds the host bridge (ECAM and 0xCF8/0xCFC, the reset
// control register at 0xCF9 served by pm) and the virtio devices the
// configuration asks for, and claims their ranges.
func (vm *VM) setupPCI(pm *devices.ACPIPM) error {
	var err error
	p := &pciDevices{bySID: map[uint16]*virtioFunction{}}
	p.bus, err = pci.NewBus(pci.Config{ECAMBase: pciECAMBase, MMIOBase: pciMMIOBase, MMIOSize: pciMMIOSize,
		IOBase: pciIOBase, IOSize: pciIOSize,
		ResetControl: func(cpu int, write bool, data []byte) {
			if write {
				pm.Out(cpu, portReset, data)
			} else {
				pm.In(cpu, portReset, data)
			}
		}}, vm.sendPCIMSI)
	if err != nil {
		return err
	}
	vm.pci = p
	if vm.cfg.VirtioConsole {
		p.console = console.New(vm.console)
		if err := vm.addVirtio("virtio-console", p.console, 0x078000, []string{"config", "receiveq", "transmitq"}); err != nil {
			return err
		}
	}
	if vm.cfg.Disk.Path != "" {
		d, err := blk.Open(vm.cfg.Disk.Path, blk.Options{ReadOnly: vm.cfg.Disk.ReadOnly, Queues: vm.cfg.CPUs, Serial: "govmm-disk0"})
		if err != nil {
			return err
		}
		p.disk = d
		labels := []string{"config"}
		for q := range vm.cfg.CPUs {
			labels = append(labels, fmt.Sprintf("req.%d", q))
		}
		if err := vm.addVirtio("virtio-blk", d, 0x010000, labels); err != nil {
			return err
		}
	}
	for _, r := range p.bus.Ranges() {
		if err := vm.bus.Register(r); err != nil {
			return err
		}
	}
	return nil
}

// addVirtio puts dev on the bus as a modern virtio-pci function with one
// MSI-X vector per label (vector 0 for configuration changes, one per
// queue after it).
func (vm *VM) addVirtio(name string, dev virtio.Device, class uint32, labels []string) error {
	f := pci.NewFunction(pci.Header{VendorID: virtioVendor, DeviceID: virtioDeviceID + uint16(dev.Type()),
		SubsystemVendorID: virtioVendor, SubsystemID: 0x1100, Class: class, Revision: 1})
	if err := f.SetBAR(msixBAR, pci.BAR{Kind: pci.BARMem32, Size: 0x1000, Cause: msixCause}); err != nil {
		return err
	}
	msix, err := f.AddMSIX(len(labels), pci.BARLocation{BAR: msixBAR}, pci.BARLocation{BAR: msixBAR, Off: msixPBA})
	if err != nil {
		return err
	}
	t, err := virtio.NewPCITransport(dev, vm.mem, msix)
	if err != nil {
		return err
	}
	if err := f.SetBAR(virtioBAR, pci.BAR{Kind: pci.BARMem64, Size: t.BARSize(), Prefetchable: true, Region: t, Cause: t.Cause}); err != nil {
		return err
	}
	caps := t.Capabilities(virtioBAR)
	for i, body := range caps {
		var hook pci.CapHook
		if i == len(caps)-1 {
			hook = t.PCICfgHook() // the PCI_CFG access capability comes last
		}
		if _, err := f.AddCapability(0x09, body, hook); err != nil {
			return err
		}
	}
	addr, err := vm.pci.bus.Add(f)
	if err != nil {
		return err
	}
	vf := &virtioFunction{name: name, fn: f, t: t, irqs: accounting.NewDeviceIRQs(name, addr.String(), len(labels), vm.cfg.CPUs)}
	vf.irqs.Labels = labels
	vf.irqs.Held = func(v int) (pended, dropped uint64) {
		_, pended, dropped = msix.Counts(v)
		return pended, dropped
	}
	vf.irqs.Queues = func() []accounting.QueueReport { return queueReports(t.Stats(), labels[1:]) }
	if vm.ioeventfds {
		f.OnBARChange(func(bar int, base uint64, decoding bool) {
			if bar == virtioBAR {
				vm.placeNotify(vf, base, decoding)
			}
		})
	}
	vm.pci.funcs = append(vm.pci.funcs, vf)
	vm.pci.bySID[addr.SourceID()] = vf
	vm.acct.Devices = append(vm.acct.Devices, vf.irqs)
	return nil
}

// queueReports copies a transport's queue counters for the accounting;
// labels[q] names queue q (its vector's label).
func queueReports(st *virtio.TransportStats, labels []string) []accounting.QueueReport {
	out := make([]accounting.QueueReport, len(st.Queues))
	for q := range st.Queues {
		s := &st.Queues[q]
		out[q] = accounting.QueueReport{Queue: q, Kicks: s.Kicks.Load(), Completed: s.Pushed.Load(),
			Interrupts: s.Interrupts.Load(), Suppressed: s.Suppressed.Load(), BadChains: s.BadChains.Load()}
		if q < len(labels) {
			out[q].Label = labels[q]
		}
	}
	return out
}

func msixCause(off uint64, write bool) exitcause.Cause { return exitcause.MMIOMSIXTable }

// sendPCIMSI is the PCI bus's MSI sink: the message goes through the
// remapping unit (or straight, compatibility format) to the APIC bus,
// counted per device vector and destination CPU.
func (vm *VM) sendPCIMSI(vector int, addr uint64, data uint32, sid uint16) bool {
	vf := vm.pci.bySID[sid]
	if vf == nil {
		return vm.plat.SendMSI(addr, data, sid)
	}
	if !vm.plat.SendMSIAccepted(addr, data, sid, func(cpu int) { vf.irqs.Delivered(vector, cpu) }) {
		vf.irqs.Refused(vector)
		return false
	}
	return true
}

// placeNotify keeps vf's queue notify addresses on KVM ioeventfds: a
// guest notify then costs no exit to user space (KVM signals the
// eventfd from its MMIO bus; hostprobe measures that it does on this
// host). Registered at the BAR's base while it decodes, moved with it.
func (vm *VM) placeNotify(vf *virtioFunction, base uint64, decoding bool) {
	vf.mu.Lock()
	defer vf.mu.Unlock()
	want := uint64(0)
	if decoding {
		want = base
	}
	if want == vf.notifyAt {
		return
	}
	if vf.notifyAt != 0 {
		vm.setNotifyFDs(vf, vf.notifyAt, true)
	}
	vf.notifyAt = 0
	if want != 0 && vm.setNotifyFDs(vf, want, false) {
		vf.notifyAt = want
	}
}

// setNotifyFDs assigns (or deassigns) one ioeventfd per queue at base.
// A failure leaves the notifies to exit to user space (the transport
// serves those too) and says so once.
func (vm *VM) setNotifyFDs(vf *virtioFunction, base uint64, deassign bool) bool {
	event := func(q int, flags uint32) kvm.IOEventFD {
		return kvm.IOEventFD{Addr: base + vf.t.NotifyOffset(q), Len: 2, FD: int32(vf.t.NotifyFD(q)), Flags: flags}
	}
	var flags uint32
	if deassign {
		flags = kvm.IOEventFDFlagDeassign
	}
	for q := range vf.t.NumQueues() {
		if err := vm.kvm.SetIOEventFD(event(q, flags)); err != nil {
			if !deassign {
				vm.log().Warn(vf.name+": queue notifies will exit to user space", "err", err)
				for r := range q {
					vm.kvm.SetIOEventFD(event(r, kvm.IOEventFDFlagDeassign))
				}
			}
			return false
		}
	}
	return true
}

// acpiHost is the bus as the ACPI tables announce it (MCFG, PCI0's _CRS,
// RES0's ECAM reservation).
func pciACPIHost() *acpi.PCIHost {
	return &acpi.PCIHost{ECAMBase: pciECAMBase, MMIOBase: pciMMIOBase, MMIOSize: pciMMIOSize, IOBase: pciIOBase, IOSize: pciIOSize}
}

// wantsPCI: the configuration asks for a PCI device.
func (c *Config) wantsPCI() bool { return c.VirtioConsole || c.Disk.Path != "" }

// closePCI stops the devices' goroutines and releases their files.
func (p *pciDevices) close() {
	if p == nil {
		return
	}
	for _, vf := range p.funcs {
		vf.t.Close()
	}
	if p.disk != nil {
		p.disk.Close()
	}
}
