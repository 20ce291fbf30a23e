// Package procirq reads Linux's /proc/interrupts, for govmm's guest
// commands (irqstat, blkbench): one row per interrupt source with a count
// per online CPU, and the difference of two readings.
package procirq

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Row is one line of /proc/interrupts.
type Row struct {
	Name   string // "CAL", "RES", "TLB", "LOC", or an IRQ number
	PerCPU []uint64
	Desc   string // the rest of the line: chip, hwirq, trigger, action names
}

// Total sums the per-CPU counts.
func (r Row) Total() uint64 {
	var t uint64
	for _, n := range r.PerCPU {
		t += n
	}
	return t
}

// Table is a parsed /proc/interrupts.
type Table struct {
	// CPUs are the header's CPU numbers, one per column (online CPUs
	// only, so not always 0..n-1).
	CPUs []int
	Rows []Row
}

// Parse reads /proc/interrupts: a header naming the CPUs, then one row per
// source with a count per CPU and a description. A row may have fewer
// counts than there are CPUs ("ERR:", "MIS:").
func Parse(s string) (*Table, error) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 0 || !strings.Contains(lines[0], "CPU") {
		return nil, errors.New("no CPU header in /proc/interrupts")
	}
	t := &Table{}
	for _, f := range strings.Fields(lines[0]) {
		n, err := strconv.Atoi(strings.TrimPrefix(f, "CPU"))
		if !strings.HasPrefix(f, "CPU") || err != nil {
			return nil, fmt.Errorf("/proc/interrupts header: %q is not CPUn", f)
		}
		t.CPUs = append(t.CPUs, n)
	}
	ncpu := len(t.CPUs)
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
		t.Rows = append(t.Rows, r)
	}
	return t, nil
}

// Diff returns after minus before: for each row of after, by name, the
// counts it gained on each of after's CPUs. A row or CPU absent from
// before counts from zero (an interrupt requested or a CPU onlined
// between the readings); a count that went down (a row reused for another
// interrupt) is an error.
func Diff(before, after *Table) (*Table, error) {
	col := map[int]int{} // CPU number -> column in before
	for i, c := range before.CPUs {
		col[c] = i
	}
	old := map[string]Row{}
	for _, r := range before.Rows {
		old[r.Name] = r
	}
	d := &Table{CPUs: append([]int(nil), after.CPUs...)}
	for _, r := range after.Rows {
		o, seen := old[r.Name]
		n := Row{Name: r.Name, Desc: r.Desc, PerCPU: make([]uint64, len(r.PerCPU))}
		for i, v := range r.PerCPU {
			var was uint64
			if j, ok := col[after.CPUs[i]]; ok && seen && j < len(o.PerCPU) {
				was = o.PerCPU[j]
			}
			if v < was {
				return nil, fmt.Errorf("/proc/interrupts %s on CPU%d went down from %d to %d", r.Name, after.CPUs[i], was, v)
			}
			n.PerCPU[i] = v - was
		}
		d.Rows = append(d.Rows, n)
	}
	return d, nil
}
