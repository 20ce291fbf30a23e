package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// guestDir is where 'make guests' puts floorloop.bin and rttloop.bin.
func guestDir() string {
	if d := os.Getenv("GOVMM_GUEST_DIR"); d != "" {
		return d
	}
	c := os.Getenv("GOVMM_CACHE")
	if c == "" {
		h, _ := os.UserHomeDir()
		c = filepath.Join(h, ".cache", "govmm")
	}
	return filepath.Join(c, "guest")
}

func needFloor(t *testing.T, blob string) string {
	t.Helper()
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("SKIP: no usable /dev/kvm (%v): the Go floor runs guests", err)
	}
	f.Close()
	p := filepath.Join(guestDir(), blob)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("SKIP: %s missing (run 'make guests'): %v", p, err)
	}
	return p
}

// TestExitFloor runs each exit floor loop: one line, the guest's cycles,
// every exit of the loop's kind counted once, as the C floor reports it.
func TestExitFloor(t *testing.T) {
	blob := needFloor(t, "floorloop.bin")
	re := regexp.MustCompile(`^floor kind=(\w+) count=(\d+) cycles=(\d+) exits=(\d+)\n$`)
	for _, kind := range []string{"port", "mmio", "msr"} {
		var out bytes.Buffer
		if err := run([]string{"-yield", "8ms", blob, kind, "300"}, &out); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		m := re.FindStringSubmatch(out.String())
		if m == nil || m[1] != kind || m[2] != "300" || m[4] != "300" || m[3] == "0" {
			t.Errorf("%s: %q", kind, out.String())
		}
	}
}

// TestIPIFloor runs the IPI floor in both modes: a halted and a spinning
// line, each round trip one sender exit (x2APIC; three xAPIC) and the
// receiver's EOI with its HLT or kick, counted as the C floor counts them.
func TestIPIFloor(t *testing.T) {
	blob := needFloor(t, "rttloop.bin")
	re := regexp.MustCompile(`(?m)^floor-ipi kind=(\S+) receiver=(\w+) rounds=50 gap=100000 cycles=(\d+) min=\d+ max=\d+ ` +
		`sender_exits=(\d+) receiver_exits=(\d+) kicks=(\d+) wakeups=(\d+) windows=(\d+) median=(\d+)$`)
	for kind, perSend := range map[string]uint64{"ipi-x2apic": 1, "ipi-xapic": 3} {
		for _, raw := range []bool{false, true} {
			args := []string{blob, kind, "50"}
			if raw {
				args = append([]string{"-raw"}, args...)
			}
			var out bytes.Buffer
			if err := run(args, &out); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			ms := re.FindAllStringSubmatch(out.String(), -1)
			if len(ms) != 2 || ms[0][2] != "halted" || ms[1][2] != "spinning" {
				t.Fatalf("%s: want a halted and a spinning line:\n%s", kind, out.String())
			}
			for _, m := range ms {
				n := func(i int) uint64 { v, _ := strconv.ParseUint(m[i], 10, 64); return v }
				recv, kicks, wakeups, windows := n(5), n(6), n(7), n(8)
				// Each IPI ends the receiver's wait by a kick, a wake-up or
				// neither (it came while the receiver was in the VMM, which
				// looks before it enters); each costs the receiver its EOI,
				// a halted one its HLTs (one more than its wake-ups at most), and any
				// interrupt window it asked for.
				ok := m[1] == kind && n(3) > 0 && n(9) > 0 && n(9) <= n(3)/50*4 && n(4) == 50*perSend && kicks+wakeups <= 50 && kicks+wakeups >= 40
				if m[2] == "halted" {
					ok = ok && recv >= 50+kicks+wakeups+windows && recv <= 50+kicks+51+windows
				} else {
					ok = ok && wakeups == 0 && recv == 50+kicks+windows
				}
				if !ok {
					t.Errorf("%s raw=%v: %s", kind, raw, strings.TrimSpace(m[0]))
				}
			}
		}
	}
}

// TestBadArguments: a clear error, never a panic.
func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{}, {"x", "bogus", "1"}, {"x", "port", "0"}, {"x", "port", "ten"}, {"x", "ipi-x2apic", "1", "g"}, {"/nonexistent", "port", "1"}} {
		var out bytes.Buffer
		if err := run(args, &out); err == nil {
			t.Errorf("%q: no error", args)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: a multi-line error: %v", args, err)
		}
	}
}
