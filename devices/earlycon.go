package devices

import (
	"io"
	"sync"

	"github.com/govmm/govmm/exitbus"
)

// EarlyCon is the early boot console: a 16550 transmitter on one page of
// MMIO with 32-bit registers (Linux's `earlycon=uart8250,mmio32,ADDR`),
// built so that printing costs almost no exits. Linux's 8250 early
// console polls the line status register before every byte, then writes
// the byte: on the COM1 port that is two exits per byte, about 30,000 of
// them before govmm's kernel reaches its virtio console. Here the page is
// a read-only KVM memory slot holding the registers' reset values (Page),
// so the poll reads LSR = "transmitter empty" from memory without an
// exit, and the page's writes are a coalesced MMIO zone, so KVM queues
// them in its ring instead of exiting: the writes reach the device in
// order when the VM drains the ring (Drain), at most a ring's worth of
// bytes (170) per exit. Where the host lacks read-only slots or coalesced
// MMIO, every access exits and Access serves it the same way.
//
// Registers (offset = register << 2): THR (transmit) and, with LCR.DLAB
// set, the divisor latch DLL/DLM; IER, LCR, MCR and SCR hold what is
// written. Reads: LSR is always 0x60 (transmitter holding register and
// shift register empty), IIR 0x01 (no interrupt pending), RBR 0 (nothing
// received: the early console only transmits), the rest 0 from the memory
// slot, and what was written from Access. No interrupts.
//
// Concurrency: Access (vCPU threads) and Write (the VM's ring drain) may
// run at once; one mutex orders the bytes.
type EarlyCon struct {
	mu  sync.Mutex
	out io.Writer
	// Guarded by mu: the registers the guest writes.
	ier, lcr, mcr, scr, dll, dlm uint8
	bytes                        uint64 // written to out
}

// EarlyConSize is the console's MMIO size: one page.
const EarlyConSize = 4096

// The registers EarlyCon answers, as register indexes (offset >> 2).
const (
	earlyTHR = 0 // DLL with LCR.DLAB
	earlyIER = 1 // DLM with LCR.DLAB
	earlyIIR = 2
	earlyLCR = 3
	earlyMCR = 4
	earlyLSR = 5
	earlySCR = 7

	lsrEmpty = lsrTHRE | lsrTEMT // the serial port's bits (serial.go)
)

// NewEarlyCon returns an early console writing to out.
func NewEarlyCon(out io.Writer) *EarlyCon { return &EarlyCon{out: out} }

// Page is the memory behind the read-only slot: the registers as the
// early console reads them.
func (e *EarlyCon) Page() []byte {
	p := make([]byte, EarlyConSize)
	p[earlyLSR<<2] = lsrEmpty
	p[earlyIIR<<2] = iirNone
	return p
}

// Write serves a write at off (within the page) of data, from the ring or
// from an exit.
func (e *EarlyCon) Write(off uint64, data []byte) {
	if len(data) == 0 || off%4 != 0 {
		return // a 16550 on mmio32 decodes aligned registers only
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.latch(off); r != nil {
		*r = data[0]
	} else if off>>2 == earlyTHR {
		e.out.Write(data[:1])
		e.bytes++
	}
}

// read is a register's value as an exit reads it.
func (e *EarlyCon) read(off uint64) uint8 {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch off >> 2 {
	case earlyIIR:
		return iirNone
	case earlyLSR:
		return lsrEmpty
	}
	if r := e.latch(off); r != nil {
		return *r
	}
	return 0 // RBR: nothing received
}

// latch is the register that holds what is written at off (the divisor
// latch with LCR.DLAB set), nil for THR and the read-only ones. Called
// with mu held.
func (e *EarlyCon) latch(off uint64) *uint8 {
	dlab := e.lcr&lcrDLAB != 0
	switch off >> 2 {
	case earlyTHR:
		if dlab {
			return &e.dll
		}
	case earlyIER:
		if dlab {
			return &e.dlm
		}
		return &e.ier
	case earlyLCR:
		return &e.lcr
	case earlyMCR:
		return &e.mcr
	case earlySCR:
		return &e.scr
	}
	return nil
}

// Access serves an exit on the page: a write the ring had no room for, or
// any access where the host has no read-only slot or coalescing. The
// caller drains the ring first, so that this write follows the queued ones.
func (e *EarlyCon) Access(a *exitbus.Access) error {
	if a.Write {
		e.Write(a.Off, a.Data)
		return nil
	}
	clear(a.Data)
	if a.Off%4 == 0 && len(a.Data) > 0 {
		a.Data[0] = e.read(a.Off)
	}
	return nil
}

// Bytes is how many bytes the console has printed.
func (e *EarlyCon) Bytes() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bytes
}
