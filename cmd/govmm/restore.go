package main

import (
	"fmt"
	"io"
	"os"

	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/vmm"
)

// restoreUsage is restore's -h header.
const restoreUsage = `usage: govmm restore [flags] DIR

Continues the VM saved in DIR (run's or boot's --snapshot-at and
--snapshot-dir) where its guest stopped, in this process: the same vCPUs,
memory, LAPICs, IOAPIC and devices, the same configuration. With --lapic
naming the other LAPIC than the snapshot's, the guest goes on on that one
(the handover: govmm's LAPIC state into KVM's, or back). The exit status
is the guest's, as run's. A snapshot of another format version, or with a
damaged, truncated or missing file, is refused with one line and nothing is
run.

flags:`

// cmdRestore is 'govmm restore DIR'.
func cmdRestore(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("restore", restoreUsage, consoleHelp, stderr)
	timeout := fs.Duration("timeout", 0, "stop the guest after this long (0: never)")
	quiet := fs.Bool("quiet", false, "do not print the accounting table (the guest's console is printed either way)")
	f := addVMFlags(fs)
	var lapic *vmm.LAPICKind
	fs.Func("lapic", "the LAPIC the guest goes on on: govmm or kvm (default: the snapshot's); a guest run with --pv-ipi is refused, "+
		"its PV send-IPI being its LAPIC's", func(s string) error {
		k, err := vmm.ParseLAPIC(s)
		lapic = &k
		return err
	})
	pos, _, err := parseArgs(fs, args, "")
	if err != nil {
		return 0, err
	}
	if len(pos) != 1 {
		return 0, usageErr("restore", "needs one snapshot directory DIR")
	}
	if f.disk.Path != "" {
		return 0, usageErr("restore", "--disk: a restored VM has the snapshot's devices")
	}
	if err := f.check(); err != nil {
		return 0, err
	}
	in, err := f.conIn.open(os.Stdin)
	if err != nil {
		return 0, err
	}
	vm, err := vmm.Restore(pos[0], vmm.RestoreOptions{Console: stdout, ConsoleInput: in.r, KVMPath: *f.kvmPath, LAPIC: lapic})
	if err != nil {
		return 0, err
	}
	defer vm.Close()
	jf, err := createJSONReport(*f.jsonOut)
	if err != nil {
		return 0, err
	}
	defer jf.Close()
	fmt.Fprintf(stderr, "govmm: restoring %s\n", pos[0])
	res, err := runVM(vm, nil, dashboard.Info{Mode: "restored", Kernel: pos[0]}, f, in, *timeout, stderr)
	if err != nil {
		return 0, err
	}
	o := &runOptions{quiet: *quiet}
	if err := o.report(stdout, vm, res, jf); err != nil {
		return 0, err
	}
	return guestStatus(res, stderr)
}
