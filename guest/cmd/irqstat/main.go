// Command irqstat runs inside the guest (it is in govmm's u-root
// initramfs): it reads /proc/interrupts and prints the IPI counters Linux
// keeps per CPU (function calls, reschedules, TLB shootdowns, local timer),
// the guest's view of what govmm accounts exit by exit.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/govmm/govmm/guest/internal/procirq"
)

// ipiRows are the rows that count IPIs and the local APIC timer.
var ipiRows = map[string]bool{"CAL": true, "RES": true, "TLB": true, "LOC": true}

func main() {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		fmt.Fprintln(os.Stderr, "irqstat:", err)
		os.Exit(1)
	}
	t, err := procirq.Parse(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "irqstat:", err)
		os.Exit(1)
	}
	fmt.Print(format(t))
}

// format gives one line per IPI row: name, description, total, per CPU.
func format(t *procirq.Table) string {
	var b strings.Builder
	for _, r := range t.Rows {
		if ipiRows[r.Name] {
			fmt.Fprintf(&b, "%-4s %-28s total %d per-cpu %v\n", r.Name, r.Desc, r.Total(), r.PerCPU)
		}
	}
	return b.String()
}
