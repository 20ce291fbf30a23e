package main

import (
	"testing"

	"github.com/govmm/govmm/guest/internal/procirq"
)

func TestFormat(t *testing.T) {
	tab, err := procirq.Parse(`           CPU0       CPU1
  4:        120          0  IR-IO-APIC    4-edge      ttyS0
LOC:       5012       4990   Local timer interrupts
CAL:        210        198   Function call interrupts
`)
	if err != nil {
		t.Fatal(err)
	}
	want := "LOC  Local timer interrupts       total 10002 per-cpu [5012 4990]\n" +
		"CAL  Function call interrupts     total 408 per-cpu [210 198]\n"
	if got := format(tab); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
