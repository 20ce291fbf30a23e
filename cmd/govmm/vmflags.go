package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/govmm/govmm/vmm"
)

// vmFlags are the flags run and boot share: the dashboard, dumps and
// symbols (dashFlags), the host probe's overrides, and the console input.
type vmFlags struct {
	dash      dashFlags
	hostFlags func(*vmm.Config) error
	conIn     consoleFlag
}

func addVMFlags(fs *flag.FlagSet) vmFlags {
	return vmFlags{dash: addDashFlags(fs), hostFlags: addHostFlags(fs), conIn: addConsoleFlag(fs)}
}

// vmUsage is the -h text of run and boot: the usage line, the flags and
// the console's keys.
func vmUsage(fs *flag.FlagSet, stderr io.Writer, line string) func() {
	return func() {
		fmt.Fprintln(stderr, line)
		fs.PrintDefaults()
		fmt.Fprint(stderr, consoleHelp)
	}
}
