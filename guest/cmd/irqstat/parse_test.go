package main

import "testing"

const sample = `           CPU0       CPU1       
  4:        120          0  IR-IO-APIC    4-edge      ttyS0
LOC:       5012       4990   Local timer interrupts
RES:         31         45   Rescheduling interrupts
CAL:        210        198   Function call interrupts
TLB:          3          7   TLB shootdowns
ERR:          0
`

func TestParse(t *testing.T) {
	rows, err := parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Name] = r
	}
	if r := got["CAL"]; r.Total() != 408 || len(r.PerCPU) != 2 || r.Desc != "Function call interrupts" {
		t.Errorf("CAL row %+v", r)
	}
	if r := got["4"]; r.PerCPU[0] != 120 || r.Desc != "IR-IO-APIC 4-edge ttyS0" {
		t.Errorf("IRQ 4 row %+v", r)
	}
	if r := got["ERR"]; r.Total() != 0 || len(r.PerCPU) != 1 {
		t.Errorf("ERR row %+v", r)
	}
	if _, err := parse("garbage"); err == nil {
		t.Error("no error for input without a header")
	}
}
