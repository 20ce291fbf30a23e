// Package memory is the guest's RAM: anonymous host mappings laid out as a
// PC's (below the 32-bit MMIO hole, the rest above 4 GiB), with bounds-checked
// access by guest-physical address for loaders and devices.
package memory

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Layout constants of the guest-physical address space.
const (
	LowMemTop = 0xC0000000 // 3 GiB: the MMIO hole (LAPIC, IOAPIC, ...) starts here
	HighBase  = 1 << 32
	MaxSize   = 1 << 40
	MinSize   = 2 << 20
)

// Region is one contiguous piece of guest RAM.
type Region struct {
	GPA  uint64
	Host []byte
}

// Memory is the guest's RAM. Regions never change after New.
type Memory struct {
	Regions []Region
	size    uint64
}

// CheckSize refuses a RAM size New cannot map.
func CheckSize(size uint64) error {
	if size < MinSize || size > MaxSize || size%4096 != 0 {
		return fmt.Errorf("guest memory must be a multiple of 4 KiB between 2 MiB and 1 TiB, not %d bytes", size)
	}
	return nil
}

// New maps size bytes of guest RAM.
func New(size uint64) (*Memory, error) {
	if err := CheckSize(size); err != nil {
		return nil, err
	}
	m := &Memory{size: size}
	low := min(size, LowMemTop)
	if err := m.add(0, low); err != nil {
		return nil, err
	}
	if size > low {
		if err := m.add(HighBase, size-low); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}

func (m *Memory) add(gpa, n uint64) error {
	b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("cannot map %d MiB of guest memory: %w", n>>20, err)
	}
	m.Regions = append(m.Regions, Region{GPA: gpa, Host: b})
	return nil
}

// Size is the amount of RAM.
func (m *Memory) Size() uint64 { return m.size }

// Close unmaps the RAM.
func (m *Memory) Close() {
	for _, r := range m.Regions {
		unix.Munmap(r.Host)
	}
	m.Regions = nil
}

// Slice returns the host bytes of [gpa, gpa+n), which must lie in one region.
func (m *Memory) Slice(gpa, n uint64) ([]byte, error) {
	for _, r := range m.Regions {
		end := r.GPA + uint64(len(r.Host))
		if gpa >= r.GPA && gpa <= end && n <= end-gpa {
			return r.Host[gpa-r.GPA : gpa-r.GPA+n], nil
		}
	}
	return nil, fmt.Errorf("guest-physical range [%#x, %#x) is not RAM", gpa, gpa+n)
}

// Write copies b to gpa.
func (m *Memory) Write(gpa uint64, b []byte) error {
	s, err := m.Slice(gpa, uint64(len(b)))
	if err != nil {
		return err
	}
	copy(s, b)
	return nil
}

// E820 types.
const (
	E820RAM      = 1
	E820Reserved = 2
)

// E820Entry is one entry of the firmware memory map.
type E820Entry struct {
	Addr, Size uint64
	Type       uint32
}

// E820 is the memory map a PC firmware would report: conventional memory,
// the legacy VGA/BIOS hole, RAM from 1 MiB, RAM above 4 GiB.
func (m *Memory) E820() []E820Entry {
	low := min(m.size, LowMemTop)
	out := []E820Entry{
		{0, 0x9FC00, E820RAM},
		{0x9FC00, 0x100000 - 0x9FC00, E820Reserved},
		{0x100000, low - 0x100000, E820RAM},
	}
	if m.size > low {
		out = append(out, E820Entry{HighBase, m.size - low, E820RAM})
	}
	return out
}
