package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/govmm/govmm/linuxguest"
)

// newFlagSet is a command's flag set. Its -h text, written to w, is the
// usage line (or paragraph), the flags, then more (e.g. the console's keys).
func newFlagSet(name, usage, more string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), more)
	}
	return fs
}

// parseFlags parses args into fs. -h (or --help) prints the command's
// usage and returns flag.ErrHelp (exit 0); a flag that does not exist or a
// value it refuses is one line naming the flag and where its help is,
// never the whole usage: a script's log keeps the cause in view.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
		return err
	}
	if err != nil {
		return usageErr(fs.Name(), "%v", err)
	}
	return nil
}

// usageErr is a command-line mistake: one line ending with where the
// command's flags are explained.
func usageErr(cmd, format string, args ...any) error {
	return fmt.Errorf("%s: %s (see 'govmm %s --help')", cmd, fmt.Sprintf(format, args...), cmd)
}

// x2apicFlag is --x2apic on every command that builds a VM: the APIC mode,
// off (xAPIC only: x2APIC hidden from CPUID), physical, cluster or mixed.
// boot tells Linux which (and adds interrupt remapping for cluster and
// mixed); a bare-metal guest under run or map picks its own mode, so there
// the three x2APIC modes configure alike: x2APIC advertised.
type x2apicFlag string

// addX2APICFlag declares --x2apic with the default mode def.
func addX2APICFlag(fs *flag.FlagSet, def string, help string) *x2apicFlag {
	f := x2apicFlag(def)
	fs.Var(&f, "x2apic", help)
	return &f
}

func (f *x2apicFlag) String() string { return string(*f) }

// Set refuses anything but the four modes, naming them.
func (f *x2apicFlag) Set(s string) error {
	if _, ok := linuxguest.Modes[s]; !ok {
		return errors.New("want off, physical, cluster or mixed")
	}
	*f = x2apicFlag(s)
	return nil
}

// advertised says whether CPUID advertises x2APIC in this mode.
func (f x2apicFlag) advertised() bool { return f != "off" }
