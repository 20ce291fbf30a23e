package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/vmm"
)

// TestPVFlagsSetTheirField: each switch vmm.PVFlags declares lands in its
// own Config field and no other, and the defaults are the command's.
func TestPVFlagsSetTheirField(t *testing.T) {
	for _, f := range vmm.PVFlags() {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		p := addPVFlags(fs)
		if err := fs.Parse([]string{"--" + f.Name}); err != nil {
			t.Fatal(err)
		}
		c := p.config()
		for _, g := range vmm.PVFlags() {
			if g.On(&c) != (g.Name == f.Name) {
				t.Errorf("--%s: %s reads %v", f.Name, g.Name, g.On(&c))
			}
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c := addPVFlags(fs, pvipi.Flag).config()
	if !c.PVIPI || c.PVEOI || c.AVIC {
		t.Errorf("defaults with %s on: PVIPI %v PVEOI %v AVIC %v", pvipi.Flag, c.PVIPI, c.PVEOI, c.AVIC)
	}
}

// TestPVFlagsOnEveryVMCommand: run, boot and map take every switch.
func TestPVFlagsOnEveryVMCommand(t *testing.T) {
	for _, f := range vmm.PVFlags() {
		if _, err := parseRunFlags([]string{"--" + f.Name + "=false", "k"}, io.Discard); err != nil {
			t.Errorf("run --%s: %v", f.Name, err)
		}
		o, err := parseBootFlags([]string{"--" + f.Name}, io.Discard)
		if err != nil {
			t.Errorf("boot --%s: %v", f.Name, err)
		} else if c := o.pvf.config(); !f.On(&c) {
			t.Errorf("boot --%s did not set it", f.Name)
		}
		// map stops at its missing KERNEL, after its flags parsed.
		if _, err := cmdMap([]string{"--" + f.Name}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "needs one KERNEL image") {
			t.Errorf("map --%s: %v", f.Name, err)
		}
	}
}

// TestPVFlagsOnKVMLAPIC: under --lapic=kvm, run's default --pv-ipi stays
// on, as KVM's own PV send-IPI (govmm maps it), with nothing said; so does
// --pv-eoi when named.
func TestPVFlagsOnKVMLAPIC(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	p := addPVFlags(fs, pvipi.Flag)
	if err := fs.Parse([]string{"--lapic=kvm", "--pv-eoi"}); err != nil {
		t.Fatal(err)
	}
	var c vmm.Config
	var notes strings.Builder
	p.applyTo(&c, &notes)
	if c.LAPIC != vmm.LAPICKVM || !c.PVIPI || !c.PVEOI || notes.Len() != 0 {
		t.Errorf("--lapic=kvm: LAPIC %v PVIPI %v PVEOI %v, notes %q; want kvm, both on, none", c.LAPIC, c.PVIPI, c.PVEOI, notes.String())
	}
	if err := c.Validate(); err != nil && strings.Contains(err.Error(), "pv-") {
		t.Errorf("--lapic=kvm with the PV switches refused: %v", err)
	}
}
