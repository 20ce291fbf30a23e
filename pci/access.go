// This file implements the configuration access mechanisms as exit-bus
// ranges: ECAM (PCIe Base §7.2.2: one 4 KiB page per function at
// ECAMBase + bus<<20 | dev<<15 | fn<<12, bus 0 only) and mechanism #1
// (PCI 3.0 §3.2.2.3.2: CONFIG_ADDRESS at 0xCF8, CONFIG_DATA at
// 0xCFC-0xCFF), plus the two BAR windows.

package pci

import (
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
)

// CONFIG_ADDRESS: enable, bus, device, function and register 7:2 are
// writable; bits 30:24 are reserved and 1:0 read 0.
const (
	cf8Enable   = 1 << 31
	cf8Writable = cf8Enable | 0x00FFFFFC
)

// Ranges lists everything the bus claims on the exit bus: ECAM, the ports
// 0xCF8-0xCFF (0xCF9 included: ResetControl), the MMIO window and the I/O
// window (if it is not empty).
func (b *Bus) Ranges() []exitbus.Range {
	r := []exitbus.Range{
		{Space: exitbus.MMIO, Base: b.cfg.ECAMBase, Len: ECAMSize, Name: "pci ecam",
			Cause: exitbus.Fixed(exitcause.MMIOPCIConfig), Handler: exitbus.HandlerFunc(b.ecam)},
		{Space: exitbus.PIO, Base: PortConfigAddress, Len: portsLen, Name: "pci config 0xcf8-0xcff",
			Cause: exitbus.Fixed(exitcause.PIOPCIConfig), Handler: exitbus.HandlerFunc(b.cf8)},
		{Space: exitbus.MMIO, Base: b.cfg.MMIOBase, Len: b.cfg.MMIOSize, Name: "pci mmio window",
			Cause: exitbus.HandlerCharges, Handler: b.windowHandler(false)},
	}
	if b.cfg.IOSize > 0 {
		r = append(r, exitbus.Range{Space: exitbus.PIO, Base: b.cfg.IOBase, Len: b.cfg.IOSize, Name: "pci io window",
			Cause: exitbus.HandlerCharges, Handler: b.windowHandler(true)})
	}
	return r
}

// config serves one configuration access to 00:dev.fn at reg; absent
// functions read all ones and ignore writes.
func (b *Bus) config(dev, fn uint32, reg uint64, write bool, data []byte) {
	f := b.function(dev, fn)
	switch {
	case f == nil && !write:
		allOnes(data)
	case f == nil:
	case write:
		f.WriteConfig(reg, data)
	default:
		f.ReadConfig(reg, data)
	}
}

// ecam serves the ECAM range (bus 0 only: the range is 1 MiB).
func (b *Bus) ecam(a *exitbus.Access) error {
	off := a.Off
	if off >= ECAMSize {
		if !a.Write {
			allOnes(a.Data)
		}
		return nil
	}
	// Function.ReadConfig/WriteConfig reject sizes and alignments.
	b.config(uint32(off>>15&31), uint32(off>>12&7), off&0xFFF, a.Write, a.Data)
	return nil
}

// cf8 serves ports 0xCF8-0xCFF.
func (b *Bus) cf8(a *exitbus.Access) error {
	n := uint64(len(a.Data))
	switch off := a.Off; {
	case off == 0 && n == 4: // CONFIG_ADDRESS is dword-only
		if a.Write {
			b.configAddress.Store(le32(a.Data) & cf8Writable)
		} else {
			put32(a.Data, b.configAddress.Load())
		}
	case off == PortResetControl-PortConfigAddress && n == 1:
		switch {
		case b.cfg.ResetControl != nil:
			b.cfg.ResetControl(a.CPU, a.Write, a.Data)
		case !a.Write:
			a.Data[0] = 0
		}
	case off >= PortConfigData-PortConfigAddress && (n == 1 || n == 2 || n == 4) && off%n == 0:
		addr := b.configAddress.Load()
		if addr&cf8Enable == 0 || addr>>16&0xFF != 0 {
			if !a.Write {
				allOnes(a.Data)
			}
			return nil
		}
		reg := uint64(addr&0xFC) | off&3
		b.config(addr>>11&31, addr>>8&7, reg, a.Write, a.Data)
	default: // other sizes at 0xCF8-0xCFB, unaligned data accesses
		if !a.Write {
			allOnes(a.Data)
		}
	}
	return nil
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
