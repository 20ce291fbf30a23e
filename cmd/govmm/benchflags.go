package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// benchFlagSet is the flag set of a bench command: -h goes to stderr and
// prints "usage: govmm NAME [flags]" and the flags.
func benchFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	return newFlagSet(name, "usage: govmm "+name+" [flags]", "", stderr)
}

// parseNoArgs parses a bench command's flags, which take no arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs.Name(), "takes no arguments (got %q)", fs.Arg(0))
	}
	return nil
}

// parseIPIModes reads a --modes list of the bare-metal IPI guests' modes
// (ipiBenchModes).
func parseIPIModes(list string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		if _, ok := ipiBenchModes[m]; !ok {
			return nil, fmt.Errorf("--modes: unknown mode %q", m)
		}
		out = append(out, m)
	}
	return out, nil
}

// parseDeliveries reads a --delivery list (ipiDeliveries).
func parseDeliveries(list string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(list, ",") {
		d = strings.TrimSpace(d)
		if !ipiDeliveries[d] {
			return nil, fmt.Errorf("--delivery: unknown delivery path %q (want plain, pveoi or avic)", d)
		}
		out = append(out, d)
	}
	return out, nil
}

// benchReport is what a bench command writes: report.md, report.csv and
// its table on stdout.
type benchReport interface {
	WriteMarkdown(io.Writer)
	WriteCSV(io.Writer) error
	WriteTable(io.Writer)
}

// writeBenchTable writes rep to the directory out and its table to stdout.
func writeBenchTable(out string, rep benchReport, stdout io.Writer) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := writeReport(out, rep); err != nil {
		return err
	}
	rep.WriteTable(stdout)
	fmt.Fprintf(stdout, "\nreport written to %s (report.md, report.csv)\n", out)
	return nil
}
