// Command irqstat runs inside the guest (it is in govmm's u-root
// initramfs): it reads /proc/interrupts and prints the IPI counters Linux
// keeps per CPU (function calls, reschedules, TLB shootdowns, local timer),
// the guest's view of what govmm accounts exit by exit.
package main

import (
	"fmt"
	"os"
)

func main() {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		fmt.Fprintln(os.Stderr, "irqstat:", err)
		os.Exit(1)
	}
	rows, err := parse(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "irqstat:", err)
		os.Exit(1)
	}
	for _, r := range rows {
		if ipiRows[r.Name] {
			fmt.Printf("%-4s %-28s total %d per-cpu %v\n", r.Name, r.Desc, r.Total(), r.PerCPU)
		}
	}
}
