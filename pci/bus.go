// This file implements the bus: its configuration, the host bridge, adding
// functions and placing their BARs in the windows as firmware would.

package pci

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// MSISink delivers one MSI write: address, data and the requester ID
// (Address.SourceID) that interrupt remapping checks. It reports whether the
// interrupt was delivered (false: the remapping path refused it). Called
// from any goroutine with no pci lock held.
// vector is the MSI-X table entry (or MSI vector) that sent it, for
// per-vector accounting.
type MSISink func(vector int, addr uint64, data uint32, sid uint16) bool

// Config places the bus in the guest's address spaces.
type Config struct {
	ECAMBase           uint64 // 1 MiB, 1 MiB-aligned: bus 0's 32 devices x 8 functions x 4 KiB
	MMIOBase, MMIOSize uint64 // window BARs are placed in (32-bit and 64-bit BARs alike, below 4 GiB)
	IOBase, IOSize     uint64 // I/O port window
	// ResetControl serves 1-byte accesses to port 0xCF9 (the reset control
	// register, which lies inside 0xCF8-0xCFF that this bus claims); nil:
	// reads 0, writes ignored.
	ResetControl func(cpu int, write bool, data []byte)
}

// ECAMSize is what the ECAM range covers: bus 0 only.
const ECAMSize = 1 << 20

// Legacy configuration mechanism #1 ports (CONFIG_ADDRESS, CONFIG_DATA).
const (
	PortConfigAddress = 0xCF8
	PortConfigData    = 0xCFC
	portsLen          = 8
	PortResetControl  = 0xCF9
)

const numDevices = 32

// Bus is PCI bus 0 with its host bridge.
type Bus struct {
	cfg  Config
	sink MSISink

	// devices holds function 0 of each device; written by Add while the
	// VM is built, read without a lock afterwards.
	devices [numDevices]*Function
	funcs   []*Function
	nextMem uint64 // bump allocators for BAR placement (Add only)
	nextIO  uint64

	// configAddress is CONFIG_ADDRESS (0xCF8): one register shared by
	// every vCPU, as on real chipsets; a guest serializes its own use.
	configAddress atomic.Uint32

	// decode is the immutable map of decoding BARs that window accesses
	// search without a lock; replaced whole by remap.
	decode atomic.Pointer[decodeMap]
	// mapMu serializes remap and guards every function's decoded array.
	mapMu sync.Mutex

	// notifyMu guards events and delivering: BAR changes queued in the
	// order remap published them, delivered by one thread at a time with
	// no lock held (notify).
	notifyMu   sync.Mutex
	events     []barEvent
	delivering bool
}

// NewBus returns a bus with the host bridge at 00:00.0. sink receives every
// MSI and MSI-X message its functions send.
func NewBus(c Config, sink MSISink) (*Bus, error) {
	if sink == nil {
		return nil, errors.New("pci: no MSI sink")
	}
	if c.ECAMBase%ECAMSize != 0 || c.ECAMBase+ECAMSize < c.ECAMBase {
		return nil, fmt.Errorf("pci: ECAM base %#x is not 1 MiB-aligned", c.ECAMBase)
	}
	if c.MMIOSize == 0 || c.MMIOBase+c.MMIOSize > 1<<32 || c.MMIOBase+c.MMIOSize < c.MMIOBase {
		return nil, fmt.Errorf("pci: MMIO window %#x+%#x is empty or not below 4 GiB", c.MMIOBase, c.MMIOSize)
	}
	if c.ECAMBase < c.MMIOBase+c.MMIOSize && c.MMIOBase < c.ECAMBase+ECAMSize {
		return nil, fmt.Errorf("pci: ECAM %#x overlaps the MMIO window %#x+%#x", c.ECAMBase, c.MMIOBase, c.MMIOSize)
	}
	if c.IOBase+c.IOSize > 1<<16 {
		return nil, fmt.Errorf("pci: I/O window %#x+%#x goes past port 0xFFFF", c.IOBase, c.IOSize)
	}
	if c.IOSize > 0 && c.IOBase < PortConfigAddress+portsLen && PortConfigAddress < c.IOBase+c.IOSize {
		return nil, fmt.Errorf("pci: I/O window %#x+%#x overlaps 0xCF8-0xCFF", c.IOBase, c.IOSize)
	}
	b := &Bus{cfg: c, sink: sink, nextMem: c.MMIOBase, nextIO: c.IOBase}
	b.decode.Store(&decodeMap{})
	if _, err := b.Add(NewFunction(hostBridge)); err != nil {
		return nil, err
	}
	return b, nil
}

// Add puts f at function 0 of the next free device (00:00.0 is the host
// bridge) and assigns each BAR a naturally aligned base in its window, in
// slot order, as firmware would. Its command register stays 0: nothing
// decodes until the guest enables it. Add runs while the VM is built.
func (b *Bus) Add(f *Function) (Address, error) {
	if f.bus != nil {
		return Address{}, errAdded
	}
	dev := -1
	for d, g := range b.devices {
		if g == nil {
			dev = d
			break
		}
	}
	if dev < 0 {
		return Address{}, errors.New("pci: bus 0 is full")
	}
	mem, io := b.nextMem, b.nextIO
	bases := [numBARs]uint64{}
	for i, s := range f.bars {
		var next *uint64
		var end uint64
		switch s.Kind {
		case BARMem32, BARMem64:
			next, end = &mem, b.cfg.MMIOBase+b.cfg.MMIOSize
		case BARIO:
			next, end = &io, b.cfg.IOBase+b.cfg.IOSize
		default:
			continue
		}
		base := (*next + s.Size - 1) &^ (s.Size - 1)
		if base < *next || base+s.Size > end {
			return Address{}, fmt.Errorf("pci: BAR %d (%#x bytes) does not fit in its window", i, s.Size)
		}
		bases[i], *next = base, base+s.Size
	}
	for i, s := range f.bars {
		if s.Kind == BARMem32 || s.Kind == BARMem64 || s.Kind == BARIO {
			f.setBase(i, bases[i])
		}
	}
	b.nextMem, b.nextIO = mem, io
	f.addr = Address{Bus: 0, Device: uint8(dev), Function: 0}
	if f.msix != nil {
		f.msix.sid = f.addr.SourceID()
		f.msix.sink = b.sink
	}
	if f.msi != nil {
		f.msi.sid = f.addr.SourceID()
		f.msi.sink = b.sink
	}
	f.bus = b
	b.devices[dev] = f
	b.funcs = append(b.funcs, f)
	return f.addr, nil
}

// Functions lists the functions on the bus, the host bridge first.
func (b *Bus) Functions() []*Function { return append([]*Function(nil), b.funcs...) }

// function returns the function at dev.fn, nil if absent.
func (b *Bus) function(dev, fn uint32) *Function {
	if fn != 0 || dev >= numDevices {
		return nil
	}
	return b.devices[dev]
}
