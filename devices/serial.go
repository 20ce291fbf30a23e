package devices

import (
	"io"
	"sync"
)

// Serial is a 16550A UART (the PC's COM1 at 0x3f8, IRQ 4) for a console.
//
// Transmit: THR writes go to Out and the transmitter is empty again at once.
// Receive: the host queues bytes with Input (or Pump); they wait in a
// receive FIFO of SerialRxSize bytes, RBR pops the oldest, LSR.DR (bit 0)
// says the FIFO holds data. When the FIFO is full, Input waits for the guest
// to read rather than drop: the host side is flow-controlled, so the overrun
// bit (LSR bit 1) is never set and no byte is lost, except those the guest
// discards itself (an FCR write with the receive-FIFO reset bit, or RBR
// reads while its driver starts).
//
// Interrupts (16550 datasheet, IIR table), highest priority first:
//   - received data available (IER bit 0, IIR 0x04): pending while the FIFO
//     holds data, as if the trigger level were 1 byte; cleared only by
//     reading the data. There is no character-timeout indication (0x0C).
//   - transmitter holding register empty (IER bit 1, IIR 0x02): set by each
//     THR write (the byte leaves at once) and by enabling it, cleared by
//     writing THR or by reading IIR when IIR reports it (not when it reports
//     received data).
//
// The IRQ line is high while an enabled source is pending and MCR.OUT2
// gates it on, as on a PC. The divisor latch, LCR, MCR and scratch
// registers hold what is written. Left out: line-status and modem-status
// interrupts, loopback, FIFO trigger levels, the transmit FIFO, baud timing.
//
// Concurrency: In and Out (from any vCPU thread), Input, Pump and StopInput
// (from the host's input goroutine) may all run at once; one mutex guards the
// registers and the FIFO. IRQ is called with that mutex released, one call
// at a time and in the order the level changed, so the last call always
// gives the current level.
type Serial struct {
	// IRQ, if set, drives the interrupt line (called with no lock held).
	IRQ func(level bool)

	mu                           sync.Mutex
	out                          io.Writer
	ier, lcr, mcr, scr, dll, dlm uint8
	fcr                          uint8
	threPending                  bool
	line                         bool
	rx                           [SerialRxSize]byte // ring: rxLen bytes from rxHead
	rxHead, rxLen                int
	rxSpace                      *sync.Cond // signalled when the guest frees FIFO space or input stops
	stopped                      bool       // StopInput was called

	irqMu sync.Mutex // serialises IRQ calls; taken while mu is held, so in mu's order
}

// SerialRxSize is the receive FIFO's size: how much host input may wait for
// the guest before Input blocks.
const SerialRxSize = 4096

// NewSerial returns a UART writing its output to out.
func NewSerial(out io.Writer) *Serial {
	s := &Serial{out: out}
	s.rxSpace = sync.NewCond(&s.mu)
	return s
}

const (
	lsrDR    = 1 << 0
	lsrTHRE  = 1 << 5
	lsrTEMT  = 1 << 6
	lcrDLAB  = 1 << 7
	ierRDA   = 1 << 0
	ierTHRE  = 1 << 1
	mcrOUT2  = 1 << 3
	fcrRxRst = 1 << 1
	iirNone  = 0x01
	iirTHRE  = 0x02
	iirRDA   = 0x04
	iirFIFOs = 0xC0
)

func (s *Serial) In(cpu int, port uint16, data []byte) {
	s.mu.Lock()
	var v uint8
	switch port & 7 {
	case 0:
		if s.lcr&lcrDLAB != 0 {
			v = s.dll
			break
		}
		if s.rxLen > 0 {
			v = s.rx[s.rxHead]
			s.rxHead = (s.rxHead + 1) % SerialRxSize
			s.rxLen--
			s.rxSpace.Broadcast()
		}
	case 1:
		if s.lcr&lcrDLAB != 0 {
			v = s.dlm
		} else {
			v = s.ier
		}
	case 2:
		v = iirNone
		switch {
		case s.ier&ierRDA != 0 && s.rxLen > 0:
			v = iirRDA // reading IIR does not acknowledge it: the data does
		case s.ier&ierTHRE != 0 && s.threPending:
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
		if s.rxLen > 0 {
			v |= lsrDR
		}
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
		s.fcr = v &^ fcrRxRst // the reset bits clear themselves
		if v&fcrRxRst != 0 {
			s.rxHead, s.rxLen = 0, 0
			s.rxSpace.Broadcast()
		}
	case 3:
		s.lcr = v
	case 4:
		s.mcr = v & 0x1F
	case 7:
		s.scr = v
	}
	s.unlockAndUpdate()
}

// Input queues p for the guest, in order. It waits while the receive FIFO is
// full until the guest reads (never dropping a byte, never setting overrun)
// and returns how many bytes it queued: all of p, unless StopInput ended the
// wait.
func (s *Serial) Input(p []byte) int {
	n := 0
	s.mu.Lock()
	for n < len(p) {
		for s.rxLen == SerialRxSize && !s.stopped {
			s.rxSpace.Wait()
		}
		if s.stopped {
			break
		}
		for n < len(p) && s.rxLen < SerialRxSize {
			s.rx[(s.rxHead+s.rxLen)%SerialRxSize] = p[n]
			s.rxLen++
			n++
		}
		if n < len(p) {
			// Raise the interrupt before waiting for the guest to read.
			s.unlockAndUpdate()
			s.mu.Lock()
		}
	}
	s.unlockAndUpdate()
	return n
}

// Pump copies r into the receive FIFO (through Input) until r ends or
// StopInput is called. It returns nil at EOF or when stopped, else r's
// error. It does not close r; a Read in progress when StopInput is called
// is not interrupted, and what it returns is dropped.
func (s *Serial) Pump(r io.Reader) error {
	buf := make([]byte, 512)
	for {
		n, err := r.Read(buf)
		if n > 0 && s.Input(buf[:n]) < n {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if s.inputStopped() {
			return nil
		}
	}
}

// StopInput ends host input for good: a waiting Input returns, and later
// ones queue nothing. Data already in the FIFO stays readable.
func (s *Serial) StopInput() {
	s.mu.Lock()
	s.stopped = true
	s.rxSpace.Broadcast()
	s.mu.Unlock()
}

func (s *Serial) inputStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// unlockAndUpdate recomputes the IRQ line, releases the lock and reports a
// change of level.
func (s *Serial) unlockAndUpdate() {
	pending := s.ier&ierRDA != 0 && s.rxLen > 0 || s.ier&ierTHRE != 0 && s.threPending
	level := pending && s.mcr&mcrOUT2 != 0
	if level == s.line {
		s.mu.Unlock()
		return
	}
	s.line = level
	irq := s.IRQ
	s.irqMu.Lock()
	s.mu.Unlock()
	if irq != nil {
		irq(level)
	}
	s.irqMu.Unlock()
}
