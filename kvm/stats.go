package kvm

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Stats is an open KVM binary statistics file (KVM_GET_STATS_FD) of a VM or
// vCPU: its descriptors are read once, its values on every Read.
type Stats struct {
	fd    int
	hdr   StatsHeader
	descs []StatDesc
}

// StatDesc describes one statistic.
type StatDesc struct {
	Name   string
	Flags  uint32
	Size   int // number of u64 values
	Offset uint32
}

func openStats(ownerFD int) (*Stats, error) {
	fd, err := ioctl(ownerFD, kvmGetStatsFD, 0)
	if err != nil {
		return nil, fmt.Errorf("KVM_GET_STATS_FD: %w", err)
	}
	s := &Stats{fd: int(fd)}
	hb := make([]byte, 24)
	if _, err := unix.Pread(s.fd, hb, 0); err != nil {
		unix.Close(s.fd)
		return nil, fmt.Errorf("read stats header: %w", err)
	}
	s.hdr, _ = readStruct[StatsHeader](hb, 0)
	descSize := 16 + int(s.hdr.NameSize)
	db := make([]byte, int(s.hdr.NumDesc)*descSize)
	if _, err := unix.Pread(s.fd, db, int64(s.hdr.DescOffset)); err != nil {
		unix.Close(s.fd)
		return nil, fmt.Errorf("read stats descriptors: %w", err)
	}
	for i := 0; i < int(s.hdr.NumDesc); i++ {
		d, _ := readStruct[statsDescFixed](db, i*descSize)
		name := db[i*descSize+16 : (i+1)*descSize]
		for j, c := range name {
			if c == 0 {
				name = name[:j]
				break
			}
		}
		s.descs = append(s.descs, StatDesc{Name: string(name), Flags: d.Flags, Size: int(d.Size), Offset: d.Offset})
	}
	return s, nil
}

// Descs returns the statistics' descriptors.
func (s *Stats) Descs() []StatDesc { return s.descs }

// Read returns the first value of every statistic, by name.
func (s *Stats) Read() (map[string]uint64, error) {
	total := 0
	for _, d := range s.descs {
		if end := int(d.Offset) + 8*d.Size; end > total {
			total = end
		}
	}
	buf := make([]byte, total)
	if _, err := unix.Pread(s.fd, buf, int64(s.hdr.DataOffset)); err != nil {
		return nil, fmt.Errorf("read stats data: %w", err)
	}
	out := make(map[string]uint64, len(s.descs))
	for _, d := range s.descs {
		if d.Size > 0 {
			out[d.Name] = binary.LittleEndian.Uint64(buf[d.Offset:])
		}
	}
	return out, nil
}

// Value reads the first value of the statistic called name alone (one
// pread of 8 bytes).
func (s *Stats) Value(name string) (uint64, error) {
	for _, d := range s.descs {
		if d.Name == name && d.Size > 0 {
			var b [8]byte
			if _, err := unix.Pread(s.fd, b[:], int64(s.hdr.DataOffset)+int64(d.Offset)); err != nil {
				return 0, fmt.Errorf("read stat %s: %w", name, err)
			}
			return binary.LittleEndian.Uint64(b[:]), nil
		}
	}
	return 0, fmt.Errorf("KVM has no statistic %q", name)
}

// Close closes the stats fd.
func (s *Stats) Close() error { return unix.Close(s.fd) }
