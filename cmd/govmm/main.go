// Command govmm runs virtual machines whose interrupt path (local APIC,
// IOAPIC, interrupt remapping and PV IPIs) lives in user space, and
// accounts for every VM exit. Its commands (usage below, flags in README.md):
//
//	govmm run [--cpus N] [--mem SIZE] [--x2apic|--no-x2apic] [--json FILE] [--console-input=auto|stdin|none] KERNEL [ARGS...]
//	govmm boot [--cpus N] [--x2apic=off|physical|cluster|mixed] [--kernel K] [--initrd I] [--exec CMDS] [--console-input=auto|stdin|none]
//	govmm bench [--cpus N,...] [--modes off,physical,cluster,mixed,pv-ipi,...] [--ops N] [--out DIR]
//	govmm map [--cpus N] [--json] KERNEL
//	govmm bench-ipi [--cpus N] [--modes M,...] [--dests N,...] [--aligned] [--delivery plain,pveoi,avic] [--out DIR]
//	govmm bench-exits [--count N] [--reps N] [--out DIR]
//	govmm bench-rtt [--modes M,...] [--delivery plain,pveoi,avic] [--rounds N] [--gap CYCLES] [--halt-poll D] [--out DIR]
//	govmm top [--url http://127.0.0.1:8411] [--once]
//	govmm host [--json]
//	govmm nested [--host amd|intel] [--timeout D] [--share DIR] [--file F] COMMAND [ARGS...]
//
// The guest's serial console reads govmm's stdin when it is a terminal (in
// raw mode; Ctrl-A x quits, Ctrl-A Ctrl-A sends Ctrl-A), a pipe or a file.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// exitError is a user-facing failure: one line, then exit code 2 (even, so
// it never looks like a debug-exit status, which is always odd).
const exitError = 2

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: govmm <command> [flags] ...

commands:
  run     run a kernel (Multiboot test kernel, bzImage or vmlinux) and print the exit accounting
  boot    boot Linux in one APIC mode (--x2apic=off|physical|cluster|mixed), verify the mode from
          the kernel's log, report boot phases and exits
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
  top     a live terminal view of a running govmm's dashboard (--dashboard), like kvm_stat
  host    run probe VMs on this host's KVM and print what it really does (what run and boot
          configure from)
  map     build a VM for a kernel and print its exit bus: every PIO, MMIO and MSR range govmm
          serves, and the MSRs the MSR filter claims
  nested  run a command inside a nested KVM host (QEMU TCG with kvm_amd, or Bochs with
          kvm_intel): govmm on KVM's own SVM or VMX code where there is no /dev/kvm

Run 'govmm <command> -h' for its flags.
`)
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	var err error
	status := 0
	switch args[0] {
	case "run":
		status, err = cmdRun(args[1:], stdout, stderr)
	case "boot":
		status, err = cmdBoot(args[1:], stdout, stderr)
	case "top":
		status, err = cmdTop(args[1:], stdout, stderr)
	case "bench":
		status, err = cmdBench(args[1:], stdout, stderr)
	case "bench-ipi":
		status, err = cmdBenchIPI(args[1:], stdout, stderr)
	case "bench-exits":
		status, err = cmdBenchExits(args[1:], stdout, stderr)
	case "bench-rtt":
		status, err = cmdBenchRTT(args[1:], stdout, stderr)
	case "host":
		status, err = cmdHost(args[1:], stdout, stderr)
	case "map":
		status, err = cmdMap(args[1:], stdout, stderr)
	case "nested":
		status, err = cmdNested(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		err = fmt.Errorf("unknown command %q (try 'govmm help')", args[0])
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "govmm: %v\n", err)
		return exitError
	}
	return status
}
