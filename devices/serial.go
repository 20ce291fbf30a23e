package devices

import (
	"io"
	"sync"
)

// Serial is a 16550A UART at 0x3f8 as far as a polling console needs it:
// THR writes go to Out, LSR always reports the transmitter empty, reads of
// RBR find no input, the divisor latch and scratch registers hold what is
// written. Interrupts (IER/IIR) are accepted and never raised until the
// IOAPIC lands; that is the "what it leaves out".
type Serial struct {
	mu                           sync.Mutex
	out                          io.Writer
	ier, lcr, mcr, scr, dll, dlm uint8
}

// NewSerial returns a UART writing its output to out.
func NewSerial(out io.Writer) *Serial { return &Serial{out: out} }

const (
	lsrTHRE = 1 << 5
	lsrTEMT = 1 << 6
	lcrDLAB = 1 << 7
)

func (s *Serial) In(cpu int, port uint16, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
		v = 0x01 // IIR: no interrupt pending
	case 3:
		v = s.lcr
	case 4:
		v = s.mcr
	case 5:
		v = lsrTHRE | lsrTEMT
	case 6:
		v = 0xB0 // MSR: DCD, DSR, CTS
	case 7:
		v = s.scr
	}
	putLE(data, uint64(v))
}

func (s *Serial) Out(cpu int, port uint16, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := uint8(data[0])
	switch port & 7 {
	case 0:
		if s.lcr&lcrDLAB != 0 {
			s.dll = v
			return
		}
		s.out.Write([]byte{v})
	case 1:
		if s.lcr&lcrDLAB != 0 {
			s.dlm = v
		} else {
			s.ier = v & 0x0F
		}
	case 3:
		s.lcr = v
	case 4:
		s.mcr = v & 0x1F
	case 7:
		s.scr = v
	}
}
