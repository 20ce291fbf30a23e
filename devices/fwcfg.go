package devices

import (
	"encoding/binary"
	"sync"
)

// FwCfg is QEMU's fw_cfg in its legacy port interface: a 16-bit key written
// to 0x510 selects an item whose bytes are read one at a time from 0x511.
// Only the items test kernels read are present; others read as zeros.
type FwCfg struct {
	mu    sync.Mutex
	items map[uint16][]byte
	sel   []byte
	pos   int
}

// fw_cfg keys.
const (
	FwCfgSignature = 0x00
	FwCfgID        = 0x01
	FwCfgRAMSize   = 0x03
	FwCfgNBCPUs    = 0x05
	FwCfgMaxCPUs   = 0x0f
)

// NewFwCfg returns fw_cfg reporting cpus and ramSize.
func NewFwCfg(cpus int, ramSize uint64) *FwCfg {
	u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
	return &FwCfg{items: map[uint16][]byte{
		FwCfgSignature: []byte("QEMU"),
		FwCfgID:        binary.LittleEndian.AppendUint32(nil, 1), // traditional interface only
		FwCfgRAMSize:   binary.LittleEndian.AppendUint64(nil, ramSize),
		FwCfgNBCPUs:    u16(uint16(cpus)),
		FwCfgMaxCPUs:   u16(uint16(cpus)),
	}}
}

func (f *FwCfg) In(cpu int, port uint16, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range data {
		data[i] = 0
	}
	if port == 0x511 && f.pos < len(f.sel) {
		data[0] = f.sel[f.pos]
		f.pos++
	}
}

func (f *FwCfg) Out(cpu int, port uint16, data []byte) {
	if port != 0x510 || len(data) < 2 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sel, f.pos = f.items[uint16(le(data[:2]))], 0
}
