// Command govmm runs virtual machines whose interrupt path (local APIC,
// IOAPIC, interrupt remapping and PV IPIs) lives in user space, and
// accounts for every VM exit. 'govmm help' lists its commands and
// 'govmm help CMD' a command's flags (docs/usage.md has them all, checked
// against the flags by TestUsageDoc).
//
// The guest's serial console reads govmm's stdin when it is a terminal (in
// raw mode; Ctrl-A x quits, Ctrl-A Ctrl-A sends Ctrl-A), a pipe or a file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// exitError is a user-facing failure: one line, then exit code 2 (even, so
// it never looks like a debug-exit status, which is always odd). A signal
// ends govmm with 128 + its number instead (statusError).
const exitError = 2

func main() {
	// What the library packages report (log/slog) reads as govmm's own lines.
	slog.SetDefault(slog.New(newLineHandler(os.Stderr)))
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: govmm <command> [flags] ...

commands:
  run     run a kernel (Multiboot test kernel, bzImage or vmlinux) and print the exit accounting
  boot    boot Linux in one APIC mode (--x2apic=off|physical|cluster|mixed), verify the mode from
          the kernel's log, report boot phases and exits
  restore continue a VM saved by run's or boot's --snapshot-at (a snapshot directory) where its
          guest stopped
  bench   boot govmm's kernel per APIC mode and CPU count with its IPI microbenchmark; write a
          report (Markdown, CSV, SVG) of exits and cycles per IPI operation
  bench-ipi
          run the bare-metal IPI guest (ipi.elf) per APIC mode, delivery path and multicast
          destination count; write the exits-per-IPI table (sender and receivers, against the
          minimum the guest code allows) as Markdown and CSV
  bench-exits
          the cost of one exit (port read, MMIO read, x2APIC MSR write) under govmm as a ratio to
          a minimal C VMM's (bench/floor) running the same guest loop, side by side
  bench-rtt
          run the bare-metal round-trip guest (rtt.elf) per APIC mode and delivery path, to a
          halted and a spinning receiver, with halt polling on and off; write the table of
          cycles and exits per IPI round trip as Markdown and CSV
  bench-seeds
          rerun the three upstream experiments behind govmm's modes (mixed: Xen's mixed x2APIC
          mode; pv-ipi: KVM's PV send-IPI against the native IPI; x2apic: Xen's x2APIC without
          remapping) in govmm's kernel; report each in the post's shape, with its statistics
  top     a live terminal view of a running govmm's dashboard (--dashboard), like kvm_stat
  host    run probe VMs on this host's KVM and print what it really does (what run and boot
          configure from)
  map     build a VM for a kernel and print its exit bus: every PIO, MMIO and MSR range govmm
          serves, and the MSRs the MSR filter claims
  nested  run a command inside a nested KVM host (QEMU TCG with kvm_amd, or Bochs with
          kvm_intel): govmm on KVM's own SVM or VMX code where there is no /dev/kvm

  help    'govmm help CMD' prints a command's flags (as 'govmm CMD --help')
  version 'govmm --version': the module's version and the VCS revision it was built from

Run 'govmm help <command>' for its flags.
`)
}

// commands are govmm's commands by name; each returns the process's exit
// status, or an error said in one line with status 2.
var commands = map[string]func(args []string, stdout, stderr io.Writer) (int, error){
	"run": cmdRun, "boot": cmdBoot, "top": cmdTop, "bench": cmdBench, "bench-ipi": cmdBenchIPI,
	"bench-exits": cmdBenchExits, "bench-rtt": cmdBenchRTT, "bench-seeds": cmdBenchSeeds, "host": cmdHost, "map": cmdMap, "nested": cmdNested,
	"restore": cmdRestore,
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	var err error
	status := 0
	switch cmd, ok := commands[args[0]]; {
	case ok:
		status, err = cmd(args[1:], stdout, helpStderr{stderr, stdout})
	case args[0] == "help" && len(args) > 1:
		if cmd, ok := commands[args[1]]; ok {
			// The command's -h text, on stdout: asked for, not an error.
			status, err = cmd([]string{"-h"}, stdout, stdout)
		} else {
			err = fmt.Errorf("unknown command %q (see 'govmm help')", args[1])
		}
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		usage(stdout)
		return 0
	case args[0] == "version" || args[0] == "--version" || args[0] == "-version":
		fmt.Fprintln(stdout, version())
		return 0
	default:
		err = fmt.Errorf("unknown command %q (see 'govmm help')", args[0])
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "govmm: %v\n", err)
		var se *statusError
		if errors.As(err, &se) {
			return se.status
		}
		return exitError
	}
	return status
}

// statusError is a failure with an exit status of its own: a signal that
// stopped the guest ends govmm with 128 + its number, as a shell reports a
// process the signal killed.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }
