package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

// benchFlagSet is the flag set of a bench command: -h prints "usage: govmm NAME [flags]" and the flags.
func benchFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	return newFlagSet(name, "usage: govmm "+name+" [flags]", "", stderr)
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
