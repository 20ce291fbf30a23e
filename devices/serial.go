package devices

import (
	"io"
	"sync"
)

// Serial is a 16550A UART (the PC's COM1 at 0x3f8, IRQ 4) for a console:
// THR writes go to Out and the transmitter is always empty at once; there
// is no input (RBR reads 0, no data-ready); the divisor latch, LCR, MCR and
// scratch registers hold what is written. Its one interrupt source is
// "transmitter holding register empty" (IER bit 1), raised on the IRQ line
// when MCR.OUT2 gates it on as on a PC, cleared by reading IIR or writing
// THR, and set again by each write (the byte leaves at once). Left out:
// receive, line-status and modem-status interrupts, loopback, FIFO levels.
type Serial struct {
	// IRQ, if set, drives the interrupt line (called with no lock held).
	IRQ func(level bool)

	mu                           sync.Mutex
	out                          io.Writer
	ier, lcr, mcr, scr, dll, dlm uint8
	fcr                          uint8
	threPending                  bool
	line                         bool
}

// NewSerial returns a UART writing its output to out.
func NewSerial(out io.Writer) *Serial { return &Serial{out: out} }

const (
	lsrTHRE  = 1 << 5
	lsrTEMT  = 1 << 6
	lcrDLAB  = 1 << 7
	ierTHRE  = 1 << 1
	mcrOUT2  = 1 << 3
	iirNone  = 0x01
	iirTHRE  = 0x02
	iirFIFOs = 0xC0
)

func (s *Serial) In(cpu int, port uint16, data []byte) {
	s.mu.Lock()
	var v uint8
	switch port & 7 {
	case 0:
		if s.lcr&lcrDLAB != 0 {
			v = s.dll
		}
	case 1:
		if s.lcr&lcrDLAB != 0 {
			v = s.dlm
		} else {
			v = s.ier
		}
	case 2:
		v = iirNone
		if s.ier&ierTHRE != 0 && s.threPending {
			v = iirTHRE
			s.threPending = false // reading IIR acknowledges THRE
		}
		if s.fcr&1 != 0 {
			v |= iirFIFOs
		}
	case 3:
		v = s.lcr
	case 4:
		v = s.mcr
	case 5:
		v = lsrTHRE | lsrTEMT
	case 6:
		v = 0xB0 // DCD, DSR, CTS
	case 7:
		v = s.scr
	}
	putLE(data, uint64(v))
	s.unlockAndUpdate()
}

func (s *Serial) Out(cpu int, port uint16, data []byte) {
	s.mu.Lock()
	v := data[0]
	switch port & 7 {
	case 0:
		if s.lcr&lcrDLAB != 0 {
			s.dll = v
			break
		}
		s.out.Write([]byte{v})
		s.threPending = true // sent at once: the register is empty again
	case 1:
		if s.lcr&lcrDLAB != 0 {
			s.dlm = v
			break
		}
		if v&ierTHRE != 0 && s.ier&ierTHRE == 0 {
			s.threPending = true // enabling it with THR empty interrupts at once
		}
		s.ier = v & 0x0F
	case 2:
		s.fcr = v
	case 3:
		s.lcr = v
	case 4:
		s.mcr = v & 0x1F
	case 7:
		s.scr = v
	}
	s.unlockAndUpdate()
}

// unlockAndUpdate recomputes the IRQ line, releases the lock and reports a
// change of level.
func (s *Serial) unlockAndUpdate() {
	level := s.ier&ierTHRE != 0 && s.threPending && s.mcr&mcrOUT2 != 0
	changed := level != s.line
	s.line = level
	irq := s.IRQ
	s.mu.Unlock()
	if changed && irq != nil {
		irq(level)
	}
}
