// This file implements base address registers (PCI 3.0 §6.2.5.1): their
// declaration, the sizing protocol (which falls out of the write masks) and
// the base the guest programmed.

package pci

import (
	"encoding/binary"
	"fmt"

	"github.com/govmm/govmm/exitcause"
)

// BARKind is what a BAR decodes; the zero value marks the BAR unused.
type BARKind uint8

const (
	BARUnused BARKind = iota
	BARMem32
	BARMem64 // takes two slots: i (low half) and i+1 (high half)
	BARIO
	barUpper // slot i+1 of a 64-bit BAR
)

// Minimum sizes: a memory BAR decodes at least a page (so that KVM can map
// or trap it on its own), an I/O BAR at least the 4 bytes its type bits leave.
const (
	minMemBAR = 4 << 10
	minIOBAR  = 4
	maxIOBAR  = 256 // PCI 3.0: I/O BARs request at most 256 bytes
)

// BARRegion serves accesses to a BAR that are not the MSI-X table or PBA.
// Called on the vCPU thread of the access with no pci lock held, possibly on
// several threads at once. off is from the BAR's start; data is 1 to 8
// bytes, and off+len(data) stays inside the BAR.
type BARRegion interface {
	ReadBAR(off uint64, data []byte)
	WriteBAR(off uint64, data []byte)
}

// BAR declares one base address register.
type BAR struct {
	Kind         BARKind
	Size         uint64 // power of two; memory BARs at least 4 KiB, I/O at least 4 bytes
	Prefetchable bool   // memory BARs only
	Region       BARRegion
	// Cause charges an access (off into the BAR); nil charges
	// exitcause.PCIBAR. MSI-X table and PBA accesses are charged
	// exitcause.MMIOMSIXTable whatever Cause says.
	Cause func(off uint64, write bool) exitcause.Cause
}

// BARLocation is a place inside a BAR: the MSI-X table or PBA.
type BARLocation struct {
	BAR int
	Off uint64
}

// barSlot is one of the six BAR registers.
type barSlot struct {
	BAR
}

// barDecode is what the bus decided a BAR decodes.
type barDecode struct {
	base     uint64
	decoding bool
}

// SetBAR declares BAR i. A 64-bit BAR takes slots i and i+1.
func (f *Function) SetBAR(i int, b BAR) error {
	if f.bus != nil {
		return errAdded
	}
	if i < 0 || i >= numBARs {
		return fmt.Errorf("pci: BAR %d: no such BAR (0-5)", i)
	}
	if f.bars[i].Kind != BARUnused {
		return fmt.Errorf("pci: BAR %d is already used", i)
	}
	if b.Size == 0 || b.Size&(b.Size-1) != 0 {
		return fmt.Errorf("pci: BAR %d: size %#x is not a power of two", i, b.Size)
	}
	switch b.Kind {
	case BARMem32, BARMem64:
		if b.Size < minMemBAR {
			return fmt.Errorf("pci: BAR %d: memory BAR of %#x bytes is below 4 KiB", i, b.Size)
		}
		if b.Kind == BARMem32 && b.Size > 1<<31 {
			return fmt.Errorf("pci: BAR %d: 32-bit BAR of %#x bytes", i, b.Size)
		}
	case BARIO:
		if b.Size < minIOBAR || b.Size > maxIOBAR {
			return fmt.Errorf("pci: BAR %d: I/O BAR of %d bytes (4-256)", i, b.Size)
		}
		if b.Prefetchable {
			return fmt.Errorf("pci: BAR %d: an I/O BAR cannot be prefetchable", i)
		}
	default:
		return fmt.Errorf("pci: BAR %d: unknown kind %d", i, b.Kind)
	}
	if b.Kind == BARMem64 {
		if i == numBARs-1 || f.bars[i+1].Kind != BARUnused {
			return fmt.Errorf("pci: BAR %d: a 64-bit BAR needs slot %d free", i, i+1)
		}
		f.bars[i+1] = barSlot{BAR{Kind: barUpper}}
	}
	f.bars[i] = barSlot{b}

	// The type bits are read-only; the address bits below the size are
	// read-only zeros, so writing all ones reads back the size mask.
	reg := regBAR0 + 4*i
	var typ uint32
	mask := ^(b.Size - 1)
	switch b.Kind {
	case BARIO:
		typ = 1
		mask &= 0xFFFC // 16-bit I/O decoder: upper bits hardwired 0 (allowed on x86)
	case BARMem64:
		typ = 2 << 1
		binary.LittleEndian.PutUint32(f.wmask[reg+4:], uint32(mask>>32))
		mask &= 0xFFFFFFF0
	default:
		mask &= 0xFFFFFFF0
	}
	if b.Prefetchable {
		typ |= 1 << 3
	}
	binary.LittleEndian.PutUint32(f.cfg[reg:], typ)
	binary.LittleEndian.PutUint32(f.wmask[reg:], uint32(mask))
	return nil
}

// programmed returns BAR i's kind, size and the base the guest (or Add)
// wrote, from cfg (f.mu held).
func (f *Function) programmed(i int) uint64 {
	reg := regBAR0 + 4*i
	lo := uint64(binary.LittleEndian.Uint32(f.cfg[reg:]))
	switch f.bars[i].Kind {
	case BARIO:
		return lo &^ 3
	case BARMem64:
		return (uint64(binary.LittleEndian.Uint32(f.cfg[reg+4:]))<<32 | lo) &^ 0xF
	}
	return lo &^ 0xF
}

// setBase writes base into BAR i's register(s), for Add (f.mu not needed:
// nothing runs yet).
func (f *Function) setBase(i int, base uint64) {
	reg := regBAR0 + 4*i
	lo := binary.LittleEndian.Uint32(f.cfg[reg:])
	typ := lo & 0xF
	if f.bars[i].Kind == BARIO {
		typ = lo & 3
	}
	binary.LittleEndian.PutUint32(f.cfg[reg:], uint32(base)|typ)
	if f.bars[i].Kind == BARMem64 {
		binary.LittleEndian.PutUint32(f.cfg[reg+4:], uint32(base>>32))
	}
}

// OnBARChange sets fn to be called whenever BAR bar starts or stops
// decoding, or moves while decoding (a BAR write or a command write): the
// virtio transport re-registers its ioeventfds there. It is called on the
// vCPU thread of a config write (or of another function's config write that
// changed this one's decode state, e.g. an overlap ending), with no pci lock
// held, in the order the changes happened; fn may call BARBase.
func (f *Function) OnBARChange(fn func(bar int, base uint64, decoding bool)) {
	f.onBARChange.Store(&fn)
}

// BARBase returns BAR i's programmed base and whether it decodes now: the
// command register enables its kind, it lies wholly inside the bus's window
// and overlaps no other decoding BAR. Slot i+1 of a 64-bit BAR, unused
// slots and functions not on a bus report (0, false).
func (f *Function) BARBase(i int) (base uint64, decoding bool) {
	if i < 0 || i >= numBARs || f.bus == nil {
		return 0, false
	}
	k := f.bars[i].Kind
	if k == BARUnused || k == barUpper {
		return 0, false
	}
	f.bus.mapMu.Lock()
	d := f.decoded[i]
	f.bus.mapMu.Unlock()
	if !d.decoding {
		f.mu.Lock()
		d.base = f.programmed(i)
		f.mu.Unlock()
	}
	return d.base, d.decoding
}
