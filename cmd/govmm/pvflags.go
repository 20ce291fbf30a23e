package main

import (
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/govmm/govmm/pveoi"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/vmm"
)

// pvFlags are the VM's interrupt-path switches as vmm.PVFlags declares
// them (PV units and AVIC-style delivery), shared by run, boot and map;
// the commands differ only in which are on by default. With them, --lapic:
// whose LAPIC the vCPUs have.
type pvFlags struct {
	on    map[string]*bool
	lapic *vmm.LAPICKind
	fs    *flag.FlagSet
}

// addPVFlags declares every switch on fs, those named in on defaulting to
// on, and --lapic.
func addPVFlags(fs *flag.FlagSet, on ...string) pvFlags {
	p := pvFlags{on: map[string]*bool{}, lapic: new(vmm.LAPICKind), fs: fs}
	for _, f := range vmm.PVFlags() {
		p.on[f.Name] = fs.Bool(f.Name, slices.Contains(on, f.Name), f.Help)
	}
	fs.Func("lapic", "whose local APIC the vCPUs have: govmm (its own, in user space; the default) or kvm (KVM's in-kernel LAPIC, "+
		"KVM's split irqchip: the IOAPIC, remapping unit, devices, ACPI and CPUID stay govmm's; --pv-eoi and --pv-ipi are then KVM's own, "+
		"--avic is govmm's LAPIC's and refused)",
		func(s string) (err error) { *p.lapic, err = vmm.ParseLAPIC(s); return err })
	return p
}

// set says whether the command line named flag name.
func (p pvFlags) set(name string) bool {
	found := false
	p.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// apply sets every switch in c as parsed. Under --lapic=kvm a switch of
// govmm's LAPIC with no equivalent in KVM's (not PV EOI or PV send-IPI,
// which map to KVM's own) that is on only by the command's default is
// turned off, and a line saying so goes to the command's standard error;
// one the command line names stays on, for Validate to refuse with its
// reason.
func (p pvFlags) apply(c *vmm.Config) { p.applyTo(c, p.fs.Output()) }

// applyTo is apply with its notes going to notes (nil: nowhere).
func (p pvFlags) applyTo(c *vmm.Config, notes io.Writer) {
	c.LAPIC = *p.lapic
	for _, f := range vmm.PVFlags() {
		f.Set(c, *p.on[f.Name])
	}
	if c.LAPIC != vmm.LAPICKVM {
		return
	}
	for _, f := range vmm.PVFlags() {
		if f.Name != pveoi.Flag && f.Name != pvipi.Flag && !p.set(f.Name) && f.On(c) {
			f.Set(c, false)
			if notes != nil {
				fmt.Fprintf(notes, "govmm: --lapic=kvm: --%s, on by default, is off: it is govmm's LAPIC's\n", f.Name)
			}
		}
	}
}

// config is a Config with only the switches set, for reading them back.
func (p pvFlags) config() vmm.Config {
	var c vmm.Config
	p.applyTo(&c, nil)
	return c
}
