package main

import (
	"flag"
	"slices"

	"github.com/govmm/govmm/vmm"
)

// pvFlags are the VM's interrupt-path switches as vmm.PVFlags declares
// them (PV units and AVIC-style delivery), shared by run, boot and map;
// the commands differ only in which are on by default.
type pvFlags map[string]*bool

// addPVFlags declares every switch on fs, those named in on defaulting to
// on.
func addPVFlags(fs *flag.FlagSet, on ...string) pvFlags {
	p := pvFlags{}
	for _, f := range vmm.PVFlags() {
		p[f.Name] = fs.Bool(f.Name, slices.Contains(on, f.Name), f.Help)
	}
	return p
}

// apply sets every switch in c as parsed.
func (p pvFlags) apply(c *vmm.Config) {
	for _, f := range vmm.PVFlags() {
		f.Set(c, *p[f.Name])
	}
}

// config is a Config with only the switches set, for reading them back.
func (p pvFlags) config() vmm.Config {
	var c vmm.Config
	p.apply(&c)
	return c
}
