package devices

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// FwCfg is QEMU's fw_cfg in its legacy port interface: a 16-bit key written
// to 0x510 selects an item whose bytes are read one at a time from 0x511.
// Named files are listed, as in QEMU, in the file directory (key 0x19:
// a big-endian count, then one 64-byte entry per file: big-endian size
// and key, two reserved bytes, a NUL-padded name). Only the items test
// kernels read are present; others read as zeros.
type FwCfg struct {
	mu    sync.Mutex
	items map[uint16][]byte
	files []fwCfgFile
	key   uint16 // the key last selected (with selected): for Save
	sel   []byte
	pos   int
	// selected: a key has been written; before, reads return zeros.
	selected bool
}

type fwCfgFile struct {
	name string
	key  uint16
}

// fw_cfg keys.
const (
	FwCfgSignature = 0x00
	FwCfgID        = 0x01
	FwCfgRAMSize   = 0x03
	FwCfgNBCPUs    = 0x05
	FwCfgMaxCPUs   = 0x0f
	FwCfgFileDir   = 0x19
	FwCfgFileFirst = 0x20 // the first file's key; files follow in order
)

// fwCfgNameLen is the size of a file directory entry's name field.
const fwCfgNameLen = 56

// NewFwCfg returns fw_cfg reporting cpus and ramSize.
func NewFwCfg(cpus int, ramSize uint64) *FwCfg {
	u16 := func(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
	f := &FwCfg{items: map[uint16][]byte{
		FwCfgSignature: []byte("QEMU"),
		FwCfgID:        binary.LittleEndian.AppendUint32(nil, 1), // traditional interface only
		FwCfgRAMSize:   binary.LittleEndian.AppendUint64(nil, ramSize),
		FwCfgNBCPUs:    u16(uint16(cpus)),
		FwCfgMaxCPUs:   u16(uint16(cpus)),
	}}
	f.items[FwCfgFileDir] = f.directory()
	return f
}

// AddFile publishes data as the named file (QEMU's convention: "etc/...",
// "opt/..."), at the next free key, and returns that key. Safe while the
// guest runs; a selected item keeps the bytes it had when selected.
func (f *FwCfg) AddFile(name string, data []byte) (uint16, error) {
	if name == "" || len(name) >= fwCfgNameLen {
		return 0, fmt.Errorf("fw_cfg: file name %q is empty or longer than %d bytes", name, fwCfgNameLen-1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.files {
		if e.name == name {
			return 0, fmt.Errorf("fw_cfg: file %q added twice", name)
		}
	}
	key := FwCfgFileFirst + uint16(len(f.files))
	if key >= 0x4000 { // keys with bit 14 set are writes in QEMU's encoding
		return 0, errors.New("fw_cfg: no key left for a file")
	}
	f.files = append(f.files, fwCfgFile{name: name, key: key})
	f.items[key] = append([]byte(nil), data...)
	f.items[FwCfgFileDir] = f.directory()
	return key, nil
}

// directory encodes the file directory; f.mu held (or f not yet shared).
func (f *FwCfg) directory() []byte {
	d := binary.BigEndian.AppendUint32(nil, uint32(len(f.files)))
	for _, e := range f.files {
		d = binary.BigEndian.AppendUint32(d, uint32(len(f.items[e.key])))
		d = binary.BigEndian.AppendUint16(d, e.key)
		d = append(d, 0, 0)
		var name [fwCfgNameLen]byte
		copy(name[:], e.name)
		d = append(d, name[:]...)
	}
	return d
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
	f.key, f.selected = uint16(le(data[:2])), true
	f.sel, f.pos = f.items[f.key], 0
}
