package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// One vocabulary for the APIC modes: run, boot and map name them as
// --x2apic does (off, physical, cluster, mixed); the bare-metal benchmarks
// (bench-ipi, bench-rtt) name the guest's own choice too (xapic-phys,
// xapic-flat, xapic-cluster, x2apic-phys, x2apic-cluster). Every command
// also takes the other commands' name of the same mode, where it names one
// mode there.

// apicAliases are the bare-metal benchmarks' names of --x2apic's modes.
var apicAliases = map[string]string{"xapic": "off", "x2apic-phys": "physical", "x2apic-cluster": "cluster"}

// ipiModeAliases are --x2apic's and bench's names of the bare-metal
// benchmarks' modes (off is not one: there the guest picks xapic-phys,
// xapic-flat or xapic-cluster).
var ipiModeAliases = map[string]string{"physical": "x2apic-phys", "cluster": "x2apic-cluster", "pv-ipi": "pv"}

// deliveryAliases are the delivery paths' other names (bench's +eoi,
// the flag --pv-eoi).
var deliveryAliases = map[string]string{"eoi": "pveoi", "pv-eoi": "pveoi"}

// aliasHelp is what the help of a mode flag says about the aliases.
const aliasHelp = "; the bare-metal benchmarks' names are taken too: xapic (off), x2apic-phys (physical), x2apic-cluster (cluster)"

// x2apicFlag is --x2apic on every command that builds a VM: the APIC mode,
// off (xAPIC only: x2APIC hidden from CPUID), physical, cluster or mixed.
// boot tells Linux which (and adds interrupt remapping for cluster and
// mixed); a bare-metal guest under run or map picks its own mode, so there
// the three x2APIC modes configure alike: x2APIC advertised.
type x2apicFlag string

// addX2APICFlag declares --x2apic with the default mode def.
func addX2APICFlag(fs *flag.FlagSet, def string, help string) *x2apicFlag {
	f := x2apicFlag(def)
	fs.Var(&f, "x2apic", help+aliasHelp)
	return &f
}

func (f *x2apicFlag) String() string { return string(*f) }

// Set refuses anything but the four modes (or an alias), naming them.
func (f *x2apicFlag) Set(s string) error {
	if a, ok := apicAliases[s]; ok {
		s = a
	}
	if _, ok := linuxguest.Modes[s]; !ok {
		return errors.New("want off, physical, cluster or mixed (or xapic, x2apic-phys, x2apic-cluster)")
	}
	*f = x2apicFlag(s)
	return nil
}

// advertised says whether CPUID advertises x2APIC in this mode.
func (f x2apicFlag) advertised() bool { return f != "off" }

// benchModeName is bench's name (benchModes) of a mode given in any
// command's vocabulary: an APIC mode (or its alias), pv for pv-ipi, and
// +pveoi for +eoi.
func benchModeName(m string) string {
	base, suffix, plus := strings.Cut(strings.TrimSpace(m), "+")
	if a, ok := apicAliases[base]; ok {
		base = a
	} else if base == "pv" {
		base = "pv-ipi"
	}
	if suffix == "pveoi" || suffix == "pv-eoi" {
		suffix = "eoi"
	}
	if plus {
		return base + "+" + suffix
	}
	return base
}

// parseIPIModes reads a --modes list of the bare-metal IPI guests' modes
// (ipiBenchModes), taking --x2apic's names of the same modes too.
func parseIPIModes(list string) ([]string, error) {
	return parseNames(list, ipiModeAliases, func(m string) bool { _, ok := ipiBenchModes[m]; return ok },
		"--modes: unknown mode %q (want xapic-phys, xapic-flat, xapic-cluster, x2apic-phys or physical, x2apic-cluster or cluster, mixed, pv or pv-ipi)")
}

// parseDeliveries reads a --delivery list (ipiDeliveries).
func parseDeliveries(list string) ([]string, error) {
	return parseNames(list, deliveryAliases, func(d string) bool { return ipiDeliveries[d] },
		"--delivery: unknown delivery path %q (want plain, pveoi (or pv-eoi) or avic)")
}

// parseNames reads a comma-separated list of names, each an alias's name
// or one known says is one; bad is the error for another, %q the name.
func parseNames(list string, aliases map[string]string, known func(string) bool, bad string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if a, ok := aliases[n]; ok {
			n = a
		}
		if !known(n) {
			return nil, fmt.Errorf(bad, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseLAPICs reads a bench command's --lapic list: whether it runs on
// govmm's LAPIC, on KVM's (--lapic=kvm), or both.
func parseLAPICs(list string) (govmm, kvm bool, err error) {
	for _, l := range strings.Split(list, ",") {
		k, err := vmm.ParseLAPIC(strings.TrimSpace(l))
		if err != nil {
			return false, false, err
		}
		govmm, kvm = govmm || k == vmm.LAPICGovmm, kvm || k == vmm.LAPICKVM
	}
	return govmm, kvm, nil
}
