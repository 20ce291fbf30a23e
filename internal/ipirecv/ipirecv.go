// Package ipirecv reads what the receiving CPUs of the bare-metal guest
// ipi.elf (guest/baremetal/ipi.c) counted themselves in each accounting
// section: the HLTs they executed, the interrupts that woke one, the
// interrupts and NMIs they took, their EOIs that exited and those PV EOI
// completed without an exit. The counts come from guest code alone, not
// from govmm's accounting or its cost model (package ipicost), so the
// tests and 'govmm bench-ipi' hold govmm's exits by cause against them.
package ipirecv

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Counts are one receiver's (or a sum of receivers') own counts in a
// section.
type Counts struct {
	HLTs   uint64 // HLT instructions executed (each one an exit to the VMM)
	Wakes  uint64 // interrupts and NMIs taken at a HLT: they ended it
	IRQs   uint64 // interrupts taken
	EOIs   uint64 // EOIs written to the APIC (each one an exit)
	PVEOIs uint64 // EOIs PV EOI completed (no exit)
	NMIs   uint64 // NMIs taken
}

// Section is a section's counts by APIC ID, for every AP (the BSP, APIC
// ID 0, is not a receiver here).
type Section map[int]Counts

// Sum adds up the APs' counts.
func (s Section) Sum() Counts {
	var t Counts
	for _, c := range s {
		t.HLTs += c.HLTs
		t.Wakes += c.Wakes
		t.IRQs += c.IRQs
		t.EOIs += c.EOIs
		t.PVEOIs += c.PVEOIs
		t.NMIs += c.NMIs
	}
	return t
}

// fields are the line's counts in the order ipi.elf prints them, each
// with where it goes.
var fields = []struct {
	name string
	at   func(*Counts) *uint64
}{
	{"hlts", func(c *Counts) *uint64 { return &c.HLTs }},
	{"wakes", func(c *Counts) *uint64 { return &c.Wakes }},
	{"irqs", func(c *Counts) *uint64 { return &c.IRQs }},
	{"eois", func(c *Counts) *uint64 { return &c.EOIs }},
	{"pv_eois", func(c *Counts) *uint64 { return &c.PVEOIs }},
	{"nmis", func(c *Counts) *uint64 { return &c.NMIs }},
}

var reLine = regexp.MustCompile(`(?m)^# section (\d+) [^:\n]*: receivers (.*?)\r?$`)

// Parse reads every section's line of an ipi.elf console,
//
//	# section 1 unicast: receivers hlts=1-63:2 wakes=1-63:2 irqs=1-63:2 eois=1-63:2 pv_eois=1-63:0 nmis=1-63:0
//
// each count a list of runs of APIC IDs ("a-b:v": IDs a to b counted v
// each; "a:v"; "none" with no AP), keyed by section number. Every count
// must cover the same APs, APIC IDs 1 up, each once.
func Parse(console string) (map[int]Section, error) {
	out := map[int]Section{}
	for _, m := range reLine.FindAllStringSubmatch(console, -1) {
		id, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("section number %q: %v", m[1], err)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("two receivers lines for section %d", id)
		}
		s, err := parseLine(m[2])
		if err != nil {
			return nil, fmt.Errorf("section %d receivers %q: %w", id, m[2], err)
		}
		out[id] = s
	}
	return out, nil
}

// parseLine reads "hlts=... wakes=... ...".
func parseLine(line string) (Section, error) {
	words := strings.Fields(line)
	if len(words) != len(fields) {
		return nil, fmt.Errorf("%d counts, want %d", len(words), len(fields))
	}
	s := Section{}
	aps := -1
	for i, w := range words {
		name, runs, ok := strings.Cut(w, "=")
		if !ok || name != fields[i].name {
			return nil, fmt.Errorf("count %d is %q, want %s=", i+1, w, fields[i].name)
		}
		n, err := parseRuns(runs, func(ap int, v uint64) {
			c := s[ap]
			*fields[i].at(&c) = v
			s[ap] = c
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if aps >= 0 && n != aps {
			return nil, fmt.Errorf("%s covers %d APs, %s %d", name, n, fields[0].name, aps)
		}
		aps = n
	}
	return s, nil
}

// parseRuns reads "a-b:v,c:w" (or "none"), calling set for each APIC ID,
// which must run from 1 up without a gap; it returns how many there were.
func parseRuns(runs string, set func(ap int, v uint64)) (int, error) {
	if runs == "none" {
		return 0, nil
	}
	next := 1
	for _, run := range strings.Split(runs, ",") {
		ids, val, ok := strings.Cut(run, ":")
		if !ok {
			return 0, fmt.Errorf("run %q has no ':'", run)
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("run %q: %v", run, err)
		}
		lo, hi, isRange := strings.Cut(ids, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("run %q: %v", run, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("run %q: %v", run, err)
			}
		}
		if a != next || b < a {
			return 0, fmt.Errorf("run %q: want APIC IDs from %d up", run, next)
		}
		for ap := a; ap <= b; ap++ {
			set(ap, v)
		}
		next = b + 1
	}
	return next - 1, nil
}
