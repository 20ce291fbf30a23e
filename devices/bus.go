// Package devices holds govmm's emulated platform devices and the port-I/O
// bus that dispatches exits to them. Each device owns its state; the bus is
// built once before the vCPUs start and is read-only afterwards, so lookups
// take no lock.
package devices

import (
	"sort"

	"github.com/govmm/govmm/accounting"
)

// PortDevice is a device on the I/O port bus. In and Out are called from
// vCPU threads, possibly several at once: a device guards its own state.
// port is absolute; data is 1, 2 or 4 bytes, little-endian.
type PortDevice interface {
	In(cpu int, port uint16, data []byte)
	Out(cpu int, port uint16, data []byte)
}

type portRange struct {
	base, end uint16 // [base, end)
	dev       PortDevice
	cause     accounting.Cause
}

// PortBus maps port ranges to devices.
type PortBus struct {
	ranges []portRange
}

// Register adds dev at ports [base, base+n) counted as cause.
func (b *PortBus) Register(base, n uint16, cause accounting.Cause, dev PortDevice) {
	b.ranges = append(b.ranges, portRange{base, base + n, dev, cause})
	sort.Slice(b.ranges, func(i, j int) bool { return b.ranges[i].base < b.ranges[j].base })
}

// Lookup finds the device at port; ok is false for an unclaimed port, which
// reads as all ones and ignores writes, as on a PC.
func (b *PortBus) Lookup(port uint16) (PortDevice, accounting.Cause, bool) {
	i := sort.Search(len(b.ranges), func(i int) bool { return b.ranges[i].end > port })
	if i < len(b.ranges) && b.ranges[i].base <= port {
		return b.ranges[i].dev, b.ranges[i].cause, true
	}
	return nil, accounting.CausePIOOther, false
}

func le(data []byte) uint32 {
	var v uint32
	for i := len(data) - 1; i >= 0; i-- {
		v = v<<8 | uint32(data[i])
	}
	return v
}

func putLE(data []byte, v uint64) {
	for i := range data {
		data[i] = byte(v >> (8 * i))
	}
}
