package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// helpStderr is the stderr main gives a command: a command's -h text, asked
// for, goes to stdout (as 'govmm help CMD' prints it), its errors and
// progress to stderr.
type helpStderr struct {
	io.Writer           // stderr
	help      io.Writer // stdout
}

// newFlagSet is a command's flag set. Its -h text, written to w (to stdout
// when w is main's helpStderr), is the usage line (or paragraph), the
// flags, then more (e.g. the console's keys).
func newFlagSet(name, usage, more string, w io.Writer) *flag.FlagSet {
	if h, ok := w.(helpStderr); ok {
		w = h.help
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), more)
	}
	return fs
}

// parseFlags parses args into fs, stopping at the first argument that is
// not a flag (nested's COMMAND, whose own flags follow it). -h (or --help)
// prints the command's usage and returns flag.ErrHelp (exit 0); a flag
// that does not exist or a value it refuses is one line naming the flag
// and where its help is, never the whole usage: a script's log keeps the
// cause in view.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := parseOnce(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageErr(fs.Name(), "%v", err)
	}
	return checkDurations(fs)
}

// parseOnce is fs.Parse with the usage printed only for -h.
func parseOnce(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		fs.Usage()
	}
	return err
}

// parseArgs parses args into fs with govmm's flags accepted anywhere
// before the first "--": pos are the arguments that are not flags, in
// order, and rest those after "--", never read as flags (a guest's).
// guestArgs, when the command passes arguments on to a guest (run: "KERNEL
// -- ARGS"), names the fix for an unknown flag after the first argument: a
// guest argument that looks like a flag goes after "--".
func parseArgs(fs *flag.FlagSet, args []string, guestArgs string) (pos, rest []string, err error) {
	args, rest = splitDashDash(fs, args)
	for {
		if err := parseOnce(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			if guestArgs != "" && len(pos) > 0 && strings.HasPrefix(err.Error(), "flag provided but not defined") {
				return nil, nil, fmt.Errorf("%s: %v: not a flag of govmm %s; a guest argument that looks like a flag goes after '--' (govmm %s [flags] %s)",
					fs.Name(), err, fs.Name(), fs.Name(), guestArgs)
			}
			return nil, nil, usageErr(fs.Name(), "%v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	return pos, rest, checkDurations(fs)
}

// splitDashDash splits args at the first "--" that is not a flag's value.
func splitDashDash(fs *flag.FlagSet, args []string) (before, after []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args[:i], args[i+1:]
		}
		if len(a) < 2 || a[0] != '-' || strings.Contains(a, "=") {
			continue
		}
		if f := fs.Lookup(strings.TrimLeft(a, "-")); f != nil && !isBoolFlag(f) {
			i++ // its value
		}
	}
	return args, nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// checkDurations refuses a negative value of any duration flag: none
// means anything (a --timeout of -1s is not "never"; 0 is).
func checkDurations(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		if d, ok := g.Get().(time.Duration); ok && d < 0 && err == nil {
			err = usageErr(fs.Name(), "--%s=%v: want a duration of 0 or more", f.Name, d)
		}
	})
	return err
}

// parseNoArgs parses the flags of a command that takes no arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, rest, err := parseArgs(fs, args, "")
	if err != nil {
		return err
	}
	if pos = append(pos, rest...); len(pos) > 0 {
		return usageErr(fs.Name(), "takes no arguments (got %q)", pos[0])
	}
	return nil
}

// usageErr is a command-line mistake: one line ending with where the
// command's flags are explained.
func usageErr(cmd, format string, args ...any) error {
	return fmt.Errorf("%s: %s (see 'govmm %s --help')", cmd, fmt.Sprintf(format, args...), cmd)
}
