// This file implements a function's configuration space: the stored bytes,
// per-byte write masks and the accesses the bus routes to it.

package pci

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
)

// Function is one type-0 PCI function.
type Function struct {
	hdr Header

	// Set by Bus.Add, then immutable.
	bus  *Bus
	addr Address

	// Build-time state (SetBAR, AddCapability, AddMSIX): written before
	// Add and immutable from then on, so read without a lock.
	bars    [numBARs]barSlot
	caps    []capability
	wmask   [cfgSize]byte // 1 bits are writable by the guest
	msix    *MSIX
	msi     *MSI
	capNext int // offset the next capability goes at

	// mu guards cfg: several vCPU threads may access the same function's
	// configuration space at once (Linux serializes its own accesses, but
	// a malicious guest need not).
	mu  sync.Mutex
	cfg [cfgSize]byte

	// busMaster mirrors command bit 2 so that Signal, on any goroutine,
	// can test it without taking mu.
	busMaster atomic.Bool

	// decoded is what the bus last reported for each BAR; the bus's mapMu
	// guards it.
	decoded [numBARs]barDecode
	// onBARChange is the transport's callback, set at any time.
	onBARChange atomic.Pointer[func(bar int, base uint64, decoding bool)]
}

var errAdded = errors.New("pci: function already added to a bus")

// NewFunction returns a function with header h, no BARs and no
// capabilities; the command register starts 0 (no decode, no bus master).
func NewFunction(h Header) *Function {
	f := &Function{hdr: h, capNext: headerEnd}
	le := binary.LittleEndian
	le.PutUint16(f.cfg[regVendor:], h.VendorID)
	le.PutUint16(f.cfg[regVendor+2:], h.DeviceID)
	f.cfg[regRevision] = h.Revision
	f.cfg[regRevision+1] = byte(h.Class)
	f.cfg[regRevision+2] = byte(h.Class >> 8)
	f.cfg[regRevision+3] = byte(h.Class >> 16)
	f.cfg[regHeader] = 0 // type 0, single function
	le.PutUint16(f.cfg[regSubsystem:], h.SubsystemVendorID)
	le.PutUint16(f.cfg[regSubsystem+2:], h.SubsystemID)
	le.PutUint16(f.wmask[regCommand:], cmdWritable)
	f.wmask[regCacheLine] = 0xFF // Linux writes it; stored, not acted on
	f.wmask[regIntLine] = 0xFF   // firmware's note to the OS; the pin stays 0
	return f
}

// Address is where Bus.Add put the function (zero before Add).
func (f *Function) Address() Address { return f.addr }

// Header is the identity the function was built with.
func (f *Function) Header() Header { return f.hdr }

// BusMaster reports command bit 2: whether the function may write memory,
// MSIs included.
func (f *Function) BusMaster() bool { return f.busMaster.Load() }

// Command returns the command register.
func (f *Function) Command() uint16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return binary.LittleEndian.Uint16(f.cfg[regCommand:])
}

// validAccess reports whether an access of n bytes at off is one the bus
// serves: 1, 2 or 4 bytes, naturally aligned (so never crossing a dword).
func validAccess(off uint64, n int) bool {
	return (n == 1 || n == 2 || n == 4) && off%uint64(n) == 0
}

func allOnes(data []byte) {
	for i := range data {
		data[i] = 0xFF
	}
}

// ReadConfig reads len(data) bytes at off (0-0xFFF) of the configuration
// space. An access that is not 1, 2 or 4 bytes naturally aligned reads all
// ones; bytes 0x100 and up read 0.
func (f *Function) ReadConfig(off uint64, data []byte) {
	if !validAccess(off, len(data)) || off >= ecamSize {
		allOnes(data)
		return
	}
	if off >= cfgSize {
		clear(data)
		return
	}
	f.mu.Lock()
	copy(data, f.cfg[off:])
	f.mu.Unlock()
	// A capability's hook runs with no lock held: it may call SetCapBytes.
	if c, lo, hi := f.capBody(int(off), len(data)); c != nil {
		c.hook.ReadCap(lo-c.off, data[lo-int(off):hi-int(off)])
	}
}

// WriteConfig writes data at off. Malformed accesses and read-only bits are
// ignored; BAR and command writes update the bus's decode map (and make the
// OnBARChange calls) before it returns.
func (f *Function) WriteConfig(off uint64, data []byte) {
	if !validAccess(off, len(data)) || off >= cfgSize {
		return
	}
	o := int(off)
	if c, lo, hi := f.capBody(o, len(data)); c != nil {
		c.hook.WriteCap(lo-c.off, data[lo-o:hi-o])
		return // the rest of the access is the capability's read-only header or padding
	}
	f.mu.Lock()
	oldCmd := binary.LittleEndian.Uint16(f.cfg[regCommand:])
	for i, d := range data {
		m := f.wmask[o+i]
		f.cfg[o+i] = f.cfg[o+i]&^m | d&m
	}
	cmd := binary.LittleEndian.Uint16(f.cfg[regCommand:])
	f.busMaster.Store(cmd&CmdBusMaster != 0)
	f.mu.Unlock()

	touchesBAR := o < regBAR0+4*numBARs && o+len(data) > regBAR0
	if (touchesBAR || cmd&(CmdIO|CmdMemory) != oldCmd&(CmdIO|CmdMemory)) && f.bus != nil {
		f.bus.remap()
	}
	if cmd&CmdBusMaster != 0 && oldCmd&CmdBusMaster == 0 {
		// Vectors left pending while bus mastering was off go out now.
		f.msix.flush()
		f.msi.flush()
	}
}

// SetCapBytes stores b at off in the configuration space, bypassing the
// write masks: for a CapHook that keeps its registers in config space.
// Offsets outside 0x40-0xFF are refused (the header is not a hook's).
func (f *Function) SetCapBytes(off int, b []byte) {
	if off < headerEnd || off+len(b) > cfgSize {
		return
	}
	f.mu.Lock()
	copy(f.cfg[off:], b)
	f.mu.Unlock()
}
