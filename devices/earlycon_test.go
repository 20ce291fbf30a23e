package devices

import (
	"bytes"
	"testing"

	"github.com/govmm/govmm/exitbus"
)

// TestEarlyConPrints: Linux's 8250 early console on mmio32 (init_port,
// then a poll of LSR and a THR write per byte) prints exactly the bytes
// written to THR, not the divisor written while DLAB is set; LSR reads
// "transmitter empty" from the slot's page and from an exit alike.
func TestEarlyConPrints(t *testing.T) {
	var out bytes.Buffer
	e := NewEarlyCon(&out)
	page := e.Page()
	if page[earlyLSR<<2] != 0x60 || page[earlyIIR<<2] != 0x01 || len(page) != EarlyConSize {
		t.Fatalf("page: LSR %#x IIR %#x size %d", page[earlyLSR<<2], page[earlyIIR<<2], len(page))
	}
	w := func(reg int, v byte) { e.Write(uint64(reg)<<2, []byte{v, 0, 0, 0}) }
	read := func(reg int) byte {
		a := exitbus.Access{Off: uint64(reg) << 2, Data: make([]byte, 4)}
		if err := e.Access(&a); err != nil {
			t.Fatal(err)
		}
		return a.Data[0]
	}
	// init_port: LCR 8N1 | DLAB, divisor 1, LCR 8N1, IER 0, FCR, MCR.
	w(earlyLCR, 0x83)
	w(earlyTHR, 0x01) // DLL
	w(earlyIER, 0x00) // DLM
	w(earlyLCR, 0x03)
	w(earlyIER, 0)
	w(earlyMCR, 0x03)
	for _, c := range []byte("Linux version 6.1\n") {
		if lsr := read(earlyLSR); lsr&0x20 == 0 {
			t.Fatalf("LSR %#x: transmitter not empty", lsr)
		}
		w(earlyTHR, c)
	}
	if out.String() != "Linux version 6.1\n" || e.Bytes() != 18 {
		t.Errorf("printed %q (%d bytes), want the line alone", out.String(), e.Bytes())
	}
	if read(earlyLCR) != 0x03 || read(earlyMCR) != 0x03 || read(earlyIIR) != 0x01 {
		t.Errorf("LCR %#x MCR %#x IIR %#x read back", read(earlyLCR), read(earlyMCR), read(earlyIIR))
	}
	w(earlyLCR, 0x83)
	if read(earlyTHR) != 0x01 {
		t.Errorf("DLL reads %#x with DLAB, want the divisor 1", read(earlyTHR))
	}
	e.Write(1, []byte{'x'}) // unaligned: not a register on mmio32
	a := exitbus.Access{Off: 0, Write: true, Data: []byte{'y', 0, 0, 0}}
	e.Access(&a) // DLAB still set: DLL, not output
	if out.Len() != 18 {
		t.Errorf("output grew to %q on writes that are no THR writes", out.String())
	}
}
