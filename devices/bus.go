// Package devices holds govmm's emulated platform devices. Each device
// owns its state; each claims its ports on the VM's exit bus (package
// exitbus) through Port.
package devices

import "github.com/govmm/govmm/exitbus"

// PortDevice is a device on I/O ports. In and Out are called from vCPU
// threads, possibly several at once: a device guards its own state. port
// is absolute; data is 1, 2 or 4 bytes, little-endian.
type PortDevice interface {
	In(cpu int, port uint16, data []byte)
	Out(cpu int, port uint16, data []byte)
}

// Port serves dev's ports from the exit bus.
func Port(dev PortDevice) exitbus.Handler { return portHandler{dev} }

type portHandler struct{ dev PortDevice }

func (p portHandler) Access(a *exitbus.Access) error {
	if a.Write {
		p.dev.Out(a.CPU, uint16(a.Addr), a.Data)
	} else {
		p.dev.In(a.CPU, uint16(a.Addr), a.Data)
	}
	return nil
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
