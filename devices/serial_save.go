// This file implements the UART's Save and Restore for snapshots.

package devices

import "fmt"

// SerialSaved is a UART's state in a snapshot: its registers, whether its
// transmitter-empty interrupt is pending, and the input the guest has not
// read yet.
type SerialSaved struct {
	IER, LCR, MCR, SCR, DLL, DLM, FCR uint8
	THREPending                       bool
	RX                                []byte
}

// Save returns the UART's state.
func (s *Serial) Save() SerialSaved {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := SerialSaved{IER: s.ier, LCR: s.lcr, MCR: s.mcr, SCR: s.scr, DLL: s.dll, DLM: s.dlm, FCR: s.fcr, THREPending: s.threPending}
	for i := range s.rxLen {
		v.RX = append(v.RX, s.rx[(s.rxHead+i)%SerialRxSize])
	}
	return v
}

// Restore makes the UART's state v and drives its interrupt line to
// match. More input than the FIFO holds is refused.
func (s *Serial) Restore(v SerialSaved) error {
	if len(v.RX) > SerialRxSize {
		return fmt.Errorf("serial: %d bytes of input, the FIFO holds %d", len(v.RX), SerialRxSize)
	}
	s.mu.Lock()
	s.ier, s.lcr, s.mcr, s.scr, s.dll, s.dlm, s.fcr, s.threPending = v.IER, v.LCR, v.MCR, v.SCR, v.DLL, v.DLM, v.FCR, v.THREPending
	s.rxHead, s.rxLen = 0, copy(s.rx[:], v.RX)
	s.unlockAndUpdate()
	return nil
}
