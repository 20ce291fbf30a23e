package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// outl and inl (portio_amd64.s) are 32-bit OUT and IN.
//
//go:noescape
func outl(port uint16, v uint32)

//go:noescape
func inl(port uint16) uint32

// govmm's accounting-window port (devices/marker.go): OUT N>0 opens
// measured section N, OUT 0 closes it; IN 0x660, 0x664, 0x668, 0x66C read
// the last closed section's exits (all vCPUs), exits of the reading vCPU,
// IPIs delivered and IPIs sent, IN 0x674 the exits device MSIs caused.
const (
	markerPort  = 0x660
	markerPorts = 0x18
	// section is the accounting section blkbench's run is counted in.
	section = 1
)

// marker is the accounting port, usable from the OS thread that called
// openMarker (ioperm is per thread): the caller keeps its goroutine locked
// to that thread.
type marker struct{}

// openMarker asks for the ports. It fails unless the kernel has
// X86_IOPL_IOPERM and the caller CAP_SYS_RAWIO.
func openMarker() (*marker, error) {
	if err := unix.Ioperm(markerPort, markerPorts, 1); err != nil {
		return nil, fmt.Errorf("ioperm(%#x, %#x): %w", markerPort, markerPorts, err)
	}
	return &marker{}, nil
}

func (*marker) open()  { outl(markerPort, section) }
func (*marker) close() { outl(markerPort, 0) }

// counts reads what govmm counted in the last closed section.
func (*marker) counts() markCounts {
	return markCounts{
		exits:     uint64(inl(markerPort)),
		delivered: uint64(inl(markerPort + 8)),
		sent:      uint64(inl(markerPort + 12)),
		irqExits:  uint64(inl(markerPort + 20)),
	}
}

// markCounts are govmm's counts of a section (32 bits each, saturating).
type markCounts struct {
	exits, delivered, sent, irqExits uint64
}
