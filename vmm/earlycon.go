package vmm

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govmm/govmm/devices"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"golang.org/x/sys/unix"
)

// EarlyConBase is the early console's page (devices.EarlyCon): in the
// hole below 4 GiB, clear of the PCI window (0xC0000000-0xCFFFFFFF), ECAM
// (0xE0000000), the IOAPIC, the remapping unit and the LAPIC (0xFEC00000
// up). A Linux guest prints there with `earlycon=uart8250,mmio32,` and
// this address (linuxguest.EarlyConsole).
const EarlyConBase = 0xFD000000

// earlyConDrainEvery bounds how long a byte can wait in KVM's ring while
// no vCPU exits and no other console output comes: the boot milestones
// govmm reads from the console are stamped at most this late.
const earlyConDrainEvery = 10 * time.Millisecond

// earlyConDrainIdle is the drainer's period once another console device
// has written: the guest has its real console then (Linux drops its boot
// console when the real one registers), so the page goes quiet, and what
// a guest still queues there is drained before each of that console's
// writes anyway. A drainer at earlyConDrainEvery for the VM's whole life
// woke 100 times a second for nothing.
const earlyConDrainIdle = time.Second

// earlyConsole is the early console with the queue in front of it: KVM's
// coalesced ring, when this host has read-only memory slots and
// coalesced MMIO, or nothing (the zero ring: every access then exits).
//
// Concurrency: mu orders everything written to the VM's console: a ring
// drain (from the periodic drainer, an exit on the page, or another
// console device's write through console) runs under it, and so does
// that other write, after a drain, so bytes the guest queued before they
// reach the console first.
type earlyConsole struct {
	dev  *devices.EarlyCon
	page []byte // the read-only slot's memory (mmapped: page-aligned)
	mu   sync.Mutex
	ring kvm.CoalescedRing // zero where the host cannot coalesce
	// handedOver is set by the first write of another console device
	// (orderedConsole); the drainer then slows to earlyConDrainIdle.
	handedOver atomic.Bool
}

// setupEarlyCon puts the early console on the exit bus and, where the host
// allows, behind a read-only slot and a coalesced zone; its ring is read
// through vCPU 0's mapping (KVM shares one ring page among all vCPUs).
// From here on the VM's other console devices write through vm.console.
func (vm *VM) setupEarlyCon(slot uint32) error {
	e := &earlyConsole{dev: devices.NewEarlyCon(vm.cfg.Console)}
	vm.early, vm.console = e, orderedConsole{e, vm.cfg.Console}
	if err := vm.bus.Register(exitbus.Range{Space: exitbus.MMIO, Base: EarlyConBase, Len: devices.EarlyConSize,
		Name: "early console (16550, mmio32)", Cause: exitbus.Fixed(exitcause.MMIOEarlyCon),
		Handler: exitbus.HandlerFunc(e.access)}); err != nil {
		return err
	}
	off := vm.sys.CheckExtension(kvm.CapCoalescedMMIO)
	if off == 0 || vm.sys.CheckExtension(kvm.CapReadOnlyMem) == 0 || len(vm.kvcpu) == 0 {
		return nil // every access exits: slower, the same bytes
	}
	page, err := unix.Mmap(-1, 0, devices.EarlyConSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("early console: %w", err)
	}
	copy(page, e.dev.Page())
	e.page = page
	if err := vm.kvm.SetReadOnlyMemoryRegion(slot, EarlyConBase, page); err != nil {
		return err
	}
	if err := vm.kvm.RegisterCoalescedMMIO(EarlyConBase, devices.EarlyConSize); err != nil {
		return err
	}
	ring, ok := vm.kvcpu[0].CoalescedRing(off)
	if !ok {
		return fmt.Errorf("early console: KVM puts the coalesced ring at page %d, beyond a vCPU's mapping", off)
	}
	e.ring = ring
	return nil
}

// EarlyConsoleCoalesced says whether the early console's writes queue in
// KVM's ring (a read-only slot and a coalesced zone on this host) rather
// than exiting one by one.
func (vm *VM) EarlyConsoleCoalesced() bool { return vm.early != nil && vm.early.coalesced() }

// coalesced says whether the ring is KVM's (setupEarlyCon found one).
func (e *earlyConsole) coalesced() bool { return e.ring != kvm.CoalescedRing{} }

// EarlyConsoleBytes is how many bytes the guest printed on the early
// console.
func (vm *VM) EarlyConsoleBytes() uint64 {
	if vm.early == nil {
		return 0
	}
	return vm.early.dev.Bytes()
}

// access serves an exit on the page: the queued writes first, then this
// access, in the guest's order.
func (e *earlyConsole) access(a *exitbus.Access) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainLocked()
	return e.dev.Access(a)
}

// drain hands the ring's writes to the console.
func (e *earlyConsole) drain() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainLocked()
}

func (e *earlyConsole) drainLocked() {
	e.ring.Drain(func(w kvm.CoalescedWrite) {
		if w.PhysAddr >= EarlyConBase && w.PhysAddr < EarlyConBase+devices.EarlyConSize && w.Len <= 8 {
			e.dev.Write(w.PhysAddr-EarlyConBase, w.Data[:w.Len])
		}
	})
}

// drainUntil drains every drainPeriod until done closes; Run drains once
// more when the vCPUs have stopped, so nothing the guest printed is left
// in the ring when the VM ends.
func (e *earlyConsole) drainUntil(done <-chan struct{}) {
	if !e.coalesced() {
		return
	}
	period := e.drainPeriod()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			e.drain()
			if p := e.drainPeriod(); p != period {
				period = p
				t.Reset(p)
			}
		}
	}
}

// drainPeriod is how often the drainer runs: earlyConDrainEvery while the
// early console is the guest's only one, earlyConDrainIdle after.
func (e *earlyConsole) drainPeriod() time.Duration {
	if e.handedOver.Load() {
		return earlyConDrainIdle
	}
	return earlyConDrainEvery
}

// release unmaps the slot's page once KVM no longer maps it (the VM is
// closed).
func (e *earlyConsole) release() {
	if e != nil && e.page != nil {
		unix.Munmap(e.page)
		e.page = nil
	}
}

// orderedConsole is the VM's console for every device but the early one:
// each write waits for the early console's queued bytes to go first.
type orderedConsole struct {
	e *earlyConsole
	w io.Writer
}

func (c orderedConsole) Write(p []byte) (int, error) {
	c.e.handedOver.Store(true)
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	c.e.drainLocked()
	return c.w.Write(p)
}
