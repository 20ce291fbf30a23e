package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadInputIsOneLine: every mistake on the command line is one line on
// stderr naming the cause, and exit status 2, on any machine: each case
// passes --kvm a device that does not exist (where a command opens KVM),
// so a value checked only after /dev/kvm is opened would be reported as
// "kvm unavailable" instead of as itself.
func TestBadInputIsOneLine(t *testing.T) {
	dir := t.TempDir()
	kernel := filepath.Join(dir, "k.elf")
	if err := os.WriteFile(kernel, []byte("not a kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	noKVM := filepath.Join(dir, "kvm")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"fly"}, `unknown command "fly" (see 'govmm help')`},
		{"unknown flag", []string{"run", "--fast", kernel}, "run: flag provided but not defined: -fast (see 'govmm run --help')"},
		{"unknown flag on boot", []string{"boot", "--kernal", kernel}, "boot: flag provided but not defined: -kernal (see 'govmm boot --help')"},
		{"bad number", []string{"run", "--cpus", "two", kernel}, `run: invalid value "two" for flag -cpus`},
		{"flag without value", []string{"bench-rtt", "--rounds"}, "bench-rtt: flag needs an argument: -rounds"},
		{"bad x2apic mode", []string{"run", "--x2apic=true", kernel}, `invalid value "true" for flag -x2apic: want off, physical, cluster or mixed`},
		{"bad x2apic mode on map", []string{"map", "--x2apic=false", kernel}, `map: invalid value "false" for flag -x2apic`},
		{"bad x2apic mode on boot", []string{"boot", "--x2apic=flat"}, `boot: invalid value "flat" for flag -x2apic`},
		{"no kernel", []string{"run"}, "run: needs a KERNEL image (see 'govmm run --help')"},
		{"boot argument", []string{"boot", "quiet"}, "boot: takes no arguments"},
		{"zero cpus", []string{"run", "--kvm", noKVM, "--cpus", "0", kernel}, "cannot create 0 vCPUs"},
		{"negative cpus", []string{"run", "--kvm", noKVM, "--cpus", "-3", kernel}, "cannot create -3 vCPUs"},
		{"too many cpus", []string{"run", "--kvm", noKVM, "--cpus", "99999", kernel}, "cannot create 99999 vCPUs: want 1 to 4096"},
		{"too many cpus on map", []string{"map", "--cpus", "99999", kernel}, "cannot create 99999 vCPUs"},
		{"xAPIC cpus", []string{"run", "--kvm", noKVM, "--x2apic=off", "--cpus", "300", kernel}, "300 vCPUs need x2APIC"},
		{"boot xAPIC cpus", []string{"boot", "--x2apic=off", "--cpus", "300"}, "--x2apic=off with 300 vCPUs"},
		{"missing disk", []string{"run", "--kvm", noKVM, "--disk", "/nonexistent", kernel}, "--disk /nonexistent: no such file or directory"},
		{"missing disk on boot", []string{"boot", "--disk", "/nonexistent"}, "--disk /nonexistent: no such file or directory"},
		{"bad disk option", []string{"run", "--disk", "img,rx", kernel}, `unknown option "rx"`},
		{"bad memory", []string{"run", "--kvm", noKVM, "--mem", "lots", kernel}, `bad memory size "lots"`},
		{"tiny memory", []string{"run", "--kvm", noKVM, "--mem", "4K", kernel}, "guest memory must be"},
		{"missing kernel", []string{"run", "--kvm", noKVM, filepath.Join(dir, "nope.elf")}, "cannot read kernel image"},
		{"no kvm", []string{"run", "--kvm", noKVM, kernel}, "kvm unavailable: cannot open " + noKVM},
		{"negative halt poll", []string{"run", "--halt-poll", "-1ms", kernel}, "--halt-poll=-1ms"},
		{"bad sandbox", []string{"boot", "--sandbox", "maybe"}, `--sandbox "maybe": want on or off`},
		{"bad tsc-deadline", []string{"run", "--kvm", noKVM, "--tsc-deadline", "yes", kernel}, "--tsc-deadline"},
		{"bad bench cpus", []string{"bench-ipi", "--cpus", "1"}, "--cpus 1: want 2 to 1024"},
		{"bench argument", []string{"bench-exits", "now"}, "bench-exits: takes no arguments"},
		{"bad nested host", []string{"nested", "--host", "arm", "--", "true"}, "arm"},
		{"nested without command", []string{"nested"}, "nested: no command given"},
		{"bad nested memory", []string{"nested", "--host", "intel", "--mem", "3G", "--", "true"}, "--mem 3G: want 256M or more, and at most 2G"},
		{"top argument", []string{"top", "x"}, "top: takes no arguments"},
		{"help for nothing", []string{"help", "fly"}, `unknown command "fly"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(c.args, &stdout, &stderr)
			msg := stderr.String()
			if status != exitError {
				t.Fatalf("govmm %s: status %d, want %d; stderr:\n%s", strings.Join(c.args, " "), status, exitError, msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Fatalf("govmm %s: stderr %q does not say %q", strings.Join(c.args, " "), msg, c.want)
			}
			if lines := strings.Count(strings.TrimSuffix(msg, "\n"), "\n") + 1; lines != 1 || !strings.HasSuffix(msg, "\n") {
				t.Fatalf("govmm %s: want one line on stderr, got %d:\n%s", strings.Join(c.args, " "), lines, msg)
			}
		})
	}
}

// TestHelpAndVersion: -h and 'govmm help CMD' print the command's flags
// and succeed; --version names the module and the Go toolchain.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"run", "-h"}, {"help", "run"}, {"run", "--help"}} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 0 {
			t.Fatalf("govmm %v: status %d, stderr %s", args, status, stderr.String())
		}
		out := stdout.String() + stderr.String()
		for _, want := range []string{"usage: govmm run [flags] KERNEL", "-x2apic value", "-cpus int", "Ctrl-A x"} {
			if !strings.Contains(out, want) {
				t.Errorf("govmm %v lacks %q:\n%s", args, want, out)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	if status := run([]string{"help", "boot"}, &stdout, &stderr); status != 0 || !strings.Contains(stdout.String(), "usage: govmm boot") {
		t.Errorf("govmm help boot: status %d, stdout %q: want boot's usage on stdout", status, stdout.String())
	}
	stdout.Reset()
	if status := run([]string{"--version"}, &stdout, &stderr); status != 0 || !strings.HasPrefix(stdout.String(), "govmm ") ||
		!strings.Contains(stdout.String(), "go1.") {
		t.Errorf("govmm --version: status %d, %q", status, stdout.String())
	}
}
