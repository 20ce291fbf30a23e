package main

import (
	"errors"
	"strconv"
	"strings"
)

// Row is one line of /proc/interrupts.
type Row struct {
	Name   string // "CAL", "RES", "TLB", "LOC", or an IRQ number
	PerCPU []uint64
	Desc   string
}

// Total sums the per-CPU counts.
func (r Row) Total() uint64 {
	var t uint64
	for _, n := range r.PerCPU {
		t += n
	}
	return t
}

// ipiRows are the rows that count IPIs and the local APIC timer.
var ipiRows = map[string]bool{"CAL": true, "RES": true, "TLB": true, "LOC": true}

// parse reads /proc/interrupts: a header naming the CPUs, then one row per
// source with a count per CPU and a description.
func parse(s string) ([]Row, error) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], "CPU") {
		return nil, errors.New("no CPU header in /proc/interrupts")
	}
	ncpu := len(strings.Fields(lines[0]))
	var rows []Row
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		r := Row{Name: strings.TrimSuffix(f[0], ":")}
		i := 1
		for ; i < len(f) && i <= ncpu; i++ {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				break
			}
			r.PerCPU = append(r.PerCPU, n)
		}
		r.Desc = strings.Join(f[i:], " ")
		rows = append(rows, r)
	}
	return rows, nil
}
