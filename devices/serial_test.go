package devices

import (
	"bytes"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// Port offsets of COM1 as the guest sees them.
const (
	com1RBR = 0x3F8
	com1IER = 0x3F9
	com1IIR = 0x3FA // FCR on write
	com1LCR = 0x3FB
	com1MCR = 0x3FC
	com1LSR = 0x3FD
)

func inb(s *Serial, port uint16) uint8 {
	b := []byte{0}
	s.In(0, port, b)
	return b[0]
}

func outb(s *Serial, port uint16, v uint8) { s.Out(0, port, []byte{v}) }

// lineRecorder records the IRQ line's levels; safe for concurrent calls.
type lineRecorder struct {
	mu     sync.Mutex
	levels []bool
}

func (r *lineRecorder) set(l bool) {
	r.mu.Lock()
	r.levels = append(r.levels, l)
	r.mu.Unlock()
}

func (r *lineRecorder) get() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.levels)
}

func (r *lineRecorder) level() bool {
	l := r.get()
	return len(l) > 0 && l[len(l)-1]
}

// TestSerialReceive: LSR.DR follows the FIFO, RBR pops in order, an empty
// RBR reads 0, overrun is never reported.
func TestSerialReceive(t *testing.T) {
	s := NewSerial(io.Discard)
	if lsr := inb(s, com1LSR); lsr&lsrDR != 0 {
		t.Fatalf("LSR %#x: data ready with nothing received", lsr)
	}
	if n := s.Input([]byte("ab")); n != 2 {
		t.Fatalf("Input queued %d bytes, want 2", n)
	}
	for _, want := range []byte("ab") {
		lsr := inb(s, com1LSR)
		if lsr&lsrDR == 0 || lsr&0x02 != 0 {
			t.Fatalf("LSR %#x before reading %q: want DR, no overrun", lsr, want)
		}
		if lsr&(lsrTHRE|lsrTEMT) != lsrTHRE|lsrTEMT {
			t.Fatalf("LSR %#x: transmitter no longer reported empty", lsr)
		}
		if got := inb(s, com1RBR); got != want {
			t.Fatalf("RBR %q, want %q", got, want)
		}
	}
	if lsr := inb(s, com1LSR); lsr&lsrDR != 0 {
		t.Fatalf("LSR %#x: data ready after draining", lsr)
	}
	if got := inb(s, com1RBR); got != 0 {
		t.Fatalf("RBR of an empty FIFO %#x, want 0", got)
	}
}

// TestSerialIIRPriority: received data outranks THRE in IIR; reading IIR
// acknowledges THRE only when it reports THRE.
func TestSerialIIRPriority(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		s := NewSerial(io.Discard)
		var extra uint8
		if fifo {
			outb(s, com1IIR, 0x07) // enable and reset the FIFOs
			extra = iirFIFOs
		}
		outb(s, com1MCR, mcrOUT2)
		outb(s, com1IER, ierRDA|ierTHRE) // THRE pending at once
		s.Input([]byte("xy"))
		steps := []struct {
			port uint16
			want uint8
		}{
			{com1IIR, iirRDA | extra},
			{com1IIR, iirRDA | extra}, // still: the data is there, THRE still pending behind it
			{com1RBR, 'x'},
			{com1IIR, iirRDA | extra},
			{com1RBR, 'y'},
			{com1IIR, iirTHRE | extra}, // now THRE shows, and this read acknowledges it
			{com1IIR, iirNone | extra},
		}
		for i, st := range steps {
			if got := inb(s, st.port); got != st.want {
				t.Fatalf("fifo=%v step %d: port %#x read %#x, want %#x", fifo, i, st.port, got, st.want)
			}
		}
		// RDA disabled: data present but IIR shows no interrupt.
		outb(s, com1IER, 0)
		s.Input([]byte("z"))
		if got := inb(s, com1IIR); got != iirNone|extra {
			t.Fatalf("fifo=%v: IIR %#x with RDA disabled, want none", fifo, got)
		}
	}
}

// TestSerialReceiveIRQLine: the line rises when data arrives with RDA
// enabled and OUT2 set, stays up while data remains (IIR reads do not lower
// it) and falls when the last byte is read.
func TestSerialReceiveIRQLine(t *testing.T) {
	s := NewSerial(io.Discard)
	var rec lineRecorder
	s.IRQ = rec.set
	outb(s, com1IER, ierRDA)
	s.Input([]byte("a")) // OUT2 clear: no interrupt
	if got := rec.get(); len(got) != 0 {
		t.Fatalf("line %v with OUT2 clear", got)
	}
	outb(s, com1MCR, mcrOUT2) // gated on: data already there
	inb(s, com1RBR)           // drained
	s.Input([]byte("bc"))     // arrives: up again
	inb(s, com1IIR)           // does not acknowledge received data
	inb(s, com1RBR)           // one left: still up
	if !rec.level() {
		t.Fatal("line fell with data still in the FIFO")
	}
	inb(s, com1RBR) // empty: down
	outb(s, com1IER, 0)
	s.Input([]byte("d")) // RDA disabled: nothing
	outb(s, com1IER, ierRDA)
	outb(s, com1MCR, 0) // OUT2 off: down although data is pending
	want := []bool{true, false, true, false, true, false}
	if got := rec.get(); !slices.Equal(got, want) {
		t.Fatalf("line levels %v, want %v", got, want)
	}
}

// TestSerialDLABKeepsData: with DLAB set, offset 0 is the divisor latch:
// reading it neither returns nor consumes received data.
func TestSerialDLABKeepsData(t *testing.T) {
	s := NewSerial(io.Discard)
	s.Input([]byte("q"))
	outb(s, com1LCR, lcrDLAB|0x03)
	outb(s, com1RBR, 0x0C) // DLL: 9600 baud
	if got := inb(s, com1RBR); got != 0x0C {
		t.Fatalf("DLL reads %#x, want 0x0c", got)
	}
	if lsr := inb(s, com1LSR); lsr&lsrDR == 0 {
		t.Fatalf("LSR %#x: a DLL read consumed the data", lsr)
	}
	outb(s, com1LCR, 0x03)
	if got := inb(s, com1RBR); got != 'q' {
		t.Fatalf("RBR %q after DLAB, want 'q'", got)
	}
}

// TestSerialFIFOBound: the FIFO holds SerialRxSize bytes; a further Input
// waits for the guest to read, then completes with nothing lost.
func TestSerialFIFOBound(t *testing.T) {
	s := NewSerial(io.Discard)
	fill := make([]byte, SerialRxSize)
	for i := range fill {
		fill[i] = byte(i)
	}
	if n := s.Input(fill); n != SerialRxSize {
		t.Fatalf("filling the FIFO queued %d bytes", n)
	}
	done := make(chan int)
	go func() { done <- s.Input([]byte{0xAA, 0xBB}) }()
	select {
	case n := <-done:
		t.Fatalf("Input into a full FIFO returned %d without waiting", n)
	case <-time.After(50 * time.Millisecond):
	}
	if lsr := inb(s, com1LSR); lsr&0x02 != 0 {
		t.Fatalf("LSR %#x: overrun reported", lsr)
	}
	got := []byte{inb(s, com1RBR), inb(s, com1RBR)} // room for both waiting bytes
	if n := <-done; n != 2 {
		t.Fatalf("waiting Input queued %d bytes, want 2", n)
	}
	for inb(s, com1LSR)&lsrDR != 0 {
		got = append(got, inb(s, com1RBR))
	}
	want := append(fill, 0xAA, 0xBB)
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want %d in order", len(got), len(want))
	}
}

// TestSerialStopInput: StopInput releases a waiting Input; later Inputs
// queue nothing; queued data stays readable.
func TestSerialStopInput(t *testing.T) {
	s := NewSerial(io.Discard)
	s.Input(make([]byte, SerialRxSize))
	done := make(chan int)
	go func() { done <- s.Input([]byte("late")) }()
	time.Sleep(10 * time.Millisecond)
	s.StopInput()
	if n := <-done; n != 0 {
		t.Fatalf("stopped Input queued %d bytes", n)
	}
	if n := s.Input([]byte("x")); n != 0 {
		t.Fatalf("Input after StopInput queued %d bytes", n)
	}
	if lsr := inb(s, com1LSR); lsr&lsrDR == 0 {
		t.Fatal("StopInput dropped queued data")
	}
}

// TestSerialFCRResetRx: FCR bit 1 empties the receive FIFO (the guest's
// choice) and frees a waiting Input.
func TestSerialFCRResetRx(t *testing.T) {
	s := NewSerial(io.Discard)
	s.Input(make([]byte, SerialRxSize))
	done := make(chan int)
	go func() { done <- s.Input([]byte("z")) }()
	time.Sleep(10 * time.Millisecond)
	outb(s, com1IIR, 0x03)
	if n := <-done; n != 1 {
		t.Fatalf("Input after the FIFO reset queued %d bytes", n)
	}
	if got := inb(s, com1RBR); got != 'z' {
		t.Fatalf("RBR %q after reset and input, want 'z'", got)
	}
	if got := inb(s, com1IIR); got&iirFIFOs != iirFIFOs {
		t.Fatalf("IIR %#x: FIFOs not reported enabled", got)
	}
}

// TestSerialPump is the input path end to end: a host pipe, Pump, and a
// "guest" on another goroutine polling LSR and reading RBR through In while
// a second "vCPU" writes THR, with interrupts on. More than a FIFO's worth
// goes through, so Pump must wait for the guest; EOF ends Pump with nil and
// the device keeps working.
func TestSerialPump(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	s := NewSerial(&out)
	var rec lineRecorder
	s.IRQ = rec.set
	outb(s, com1MCR, mcrOUT2)
	outb(s, com1IER, ierRDA|ierTHRE)

	msg := make([]byte, 3*SerialRxSize+123)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	pumped := make(chan error, 1)
	go func() { pumped <- s.Pump(r) }()
	go func() {
		w.Write(msg)
		w.Close()
	}()
	stopTx := make(chan struct{})
	txDone := make(chan struct{})
	go func() { // another vCPU printing meanwhile
		defer close(txDone)
		for {
			select {
			case <-stopTx:
				return
			default:
				s.Out(1, com1RBR, []byte{'.'})
				s.In(1, com1IIR, []byte{0})
			}
		}
	}()
	var got []byte
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < len(msg) && time.Now().Before(deadline) {
		b := []byte{0}
		s.In(0, com1LSR, b)
		if b[0]&lsrDR == 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		s.In(0, com1RBR, b)
		got = append(got, b[0])
	}
	close(stopTx)
	<-txDone
	if !bytes.Equal(got, msg) {
		t.Fatalf("the guest read %d bytes, want the %d written, in order", len(got), len(msg))
	}
	select {
	case err := <-pumped:
		if err != nil {
			t.Fatalf("Pump at EOF: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pump did not return at EOF")
	}
	if inb(s, com1LSR)&lsrDR != 0 {
		t.Fatal("data ready after everything was read")
	}
	// The line may end high (a THRE the other vCPU left); with THRE
	// disabled and the FIFO empty it must be low.
	outb(s, com1IER, ierRDA)
	if rec.level() {
		t.Fatal("IRQ line high with nothing pending")
	}
}

// TestSerialPumpStop: StopInput ends a Pump waiting for FIFO space.
func TestSerialPumpStop(t *testing.T) {
	s := NewSerial(io.Discard)
	pumped := make(chan error, 1)
	go func() { pumped <- s.Pump(zeros{}) }()
	for inb(s, com1LSR)&lsrDR == 0 {
		time.Sleep(time.Millisecond)
	}
	s.StopInput()
	select {
	case err := <-pumped:
		if err != nil {
			t.Fatalf("stopped Pump: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pump did not stop")
	}
}

// zeros is an endless input.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestSerialSaveRestore: a UART with its registers programmed, the THRE
// interrupt pending and input waiting restores as the same UART, and its
// interrupt line is driven to match.
func TestSerialSaveRestore(t *testing.T) {
	a := NewSerial(io.Discard)
	a.Input([]byte("hi"))
	a.Out(0, 0x3FB, []byte{0x03}) // LCR: 8N1
	a.Out(0, 0x3FC, []byte{0x08}) // MCR: OUT2
	a.Out(0, 0x3F9, []byte{0x03}) // IER: RDA and THRE
	v := a.Save()
	if string(v.RX) != "hi" || v.IER != 3 || v.LCR != 3 {
		t.Fatalf("saved %+v", v)
	}
	var level []bool
	b := NewSerial(io.Discard)
	b.IRQ = func(l bool) { level = append(level, l) }
	if err := b.Restore(v); err != nil {
		t.Fatal(err)
	}
	if got := b.Save(); string(got.RX) != "hi" || got.IER != v.IER || got.MCR != v.MCR || got.THREPending != v.THREPending {
		t.Errorf("restored UART saves as %+v, want %+v", got, v)
	}
	if len(level) != 1 || !level[0] {
		t.Errorf("IRQ line after restore %v, want raised once", level)
	}
	if err := b.Restore(SerialSaved{RX: make([]byte, SerialRxSize+1)}); err == nil {
		t.Error("more input than the FIFO holds was restored")
	}
}
