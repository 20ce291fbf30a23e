package exitbus

import (
	"encoding/binary"
	"fmt"
)

// The map as a guest reads it (govmm hands it over fw_cfg as the file
// "etc/govmm/busmap", so that a guest such as the in-guest fuzzer targets
// exactly the ranges govmm serves): a sequence of MapRecordSize-byte
// little-endian records, one per Entry, in Map's order:
//
//	0  u32 space (0 PIO, 1 MMIO, 2 MSR)
//	4  u32 flags (MapPerCPU, MapMovable, MapFilter)
//	8  u64 base
//	16 u64 end (last address, inclusive)
//	24 name, NUL-padded (cut to MapNameLen-1 bytes)
const (
	MapRecordSize = 64
	MapNameLen    = MapRecordSize - 24

	MapPerCPU  = 1 << 0
	MapMovable = 1 << 1
	MapFilter  = 1 << 2
)

// MapFileName is the map's fw_cfg file name.
const MapFileName = "etc/govmm/busmap"

// EncodeMap encodes entries as records.
func EncodeMap(entries []Entry) []byte {
	out := make([]byte, 0, len(entries)*MapRecordSize)
	for _, e := range entries {
		var flags uint32
		if e.PerCPU {
			flags |= MapPerCPU
		}
		if e.Movable {
			flags |= MapMovable
		}
		if e.Filter {
			flags |= MapFilter
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(e.Space))
		out = binary.LittleEndian.AppendUint32(out, flags)
		out = binary.LittleEndian.AppendUint64(out, e.Base)
		out = binary.LittleEndian.AppendUint64(out, e.End)
		var name [MapNameLen]byte
		copy(name[:MapNameLen-1], e.Name)
		out = append(out, name[:]...)
	}
	return out
}

// DecodeMap reads records back (names as cut by EncodeMap).
func DecodeMap(b []byte) ([]Entry, error) {
	if len(b)%MapRecordSize != 0 {
		return nil, fmt.Errorf("exitbus: map of %d bytes is not a whole number of %d-byte records", len(b), MapRecordSize)
	}
	var out []Entry
	for ; len(b) > 0; b = b[MapRecordSize:] {
		s := Space(binary.LittleEndian.Uint32(b))
		if s >= numSpaces {
			return nil, fmt.Errorf("exitbus: map record with space %d", s)
		}
		flags := binary.LittleEndian.Uint32(b[4:])
		name := b[24:MapRecordSize]
		n := 0
		for n < len(name) && name[n] != 0 {
			n++
		}
		out = append(out, Entry{Space: s, Base: binary.LittleEndian.Uint64(b[8:]), End: binary.LittleEndian.Uint64(b[16:]),
			Name: string(name[:n]), PerCPU: flags&MapPerCPU != 0, Movable: flags&MapMovable != 0, Filter: flags&MapFilter != 0})
	}
	return out, nil
}
