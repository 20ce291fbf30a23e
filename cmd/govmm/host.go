package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// cmdHost is 'govmm host': the host probe's answers, one line each, and
// what run and boot configure from them with their flags at auto.
func cmdHost(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("host", "usage: govmm host [--json[=FILE]] [--kvm DEVICE]", "", stderr)
	asJSON := addJSONFlag(fs, "the answers")
	kvmPath := addKVMFlag(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return 0, err
	}
	if err := asJSON.check(); err != nil {
		return 0, err
	}
	useKVM(*kvmPath)
	a, err := vmm.Host()
	if err != nil {
		return 0, fmt.Errorf("cannot probe %s: %w", *kvmPath, err)
	}
	d := hostprobe.Decide(a, hostprobe.Auto, hostprobe.Auto)
	module := kvmModule("/sys/module")
	if asJSON.on {
		return 0, asJSON.write(stdout, struct {
			hostprobe.Answers
			Decision  hostprobe.Decision `json:"govmm_uses"`
			KVMModule string             `json:"kvm_module,omitempty"`
		}{a, d, module})
	}
	writeHost(stdout, a, d)
	if a.Emulates {
		name := "This KVM"
		if module != "" {
			name = "This KVM (" + module + ")"
		}
		fmt.Fprintf(stdout, "\n%s interprets guest kernel code: what govmm does here is not what it does on KVM's\n"+
			"SVM or VMX code. For those, run govmm inside a nested host, e.g.\n"+
			"  %[2]s nested --host amd -- %[2]s host     (QEMU TCG with kvm_amd)\n"+
			"  %[2]s nested --host intel --file %[2]s -- %[2]s host     (Bochs with kvm_intel)\n", name, selfPath())
	}
	return 0, nil
}

// kvmModules are the KVM vendor modules govmm knows, by what they run.
var kvmModules = []string{"kvm_pvm", "kvm_amd", "kvm_intel"}

// kvmModule names the KVM vendor module loaded on this machine, read from
// sysfs (dir: /sys/module), or "" when none of those it knows is.
func kvmModule(dir string) string {
	for _, m := range kvmModules {
		if _, err := os.Stat(filepath.Join(dir, m)); err == nil {
			return m
		}
	}
	return ""
}

// selfPath is this program's path, for a command line to copy.
func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return "govmm"
}

func writeHost(w io.Writer, a hostprobe.Answers, d hostprobe.Decision) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	yes := pick[string]
	fmt.Fprintf(tw, "guest kernel code\t%s\n", yes(a.Emulates, "interpreted by KVM (no VT-x/AMD-V: pxor in kernel mode failed emulation)", "run by hardware virtualization"))
	fmt.Fprintf(tw, "TSC_DEADLINE writes\t%s\n", yes(a.TSCDeadlineReaches, "reach govmm", "dropped by KVM ("+a.Notes["tsc_deadline"]+")"))
	fmt.Fprintf(tw, "x2APIC MSRs 0x800-0x8FF\t%s\n", yes(a.X2APICMSRsReach, "reach govmm", "do not reach govmm"))
	names := make([]string, 0, len(a.ClaimedMSRs))
	for n := range a.ClaimedMSRs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(tw, "claimed MSR %s\t%s\n", n, yes(a.ClaimedMSRs[n], "reaches govmm", "does not reach govmm"))
	}
	fmt.Fprintf(tw, "KVM_IOEVENTFD\t%s\n", yes(a.IOEventFD, "works (an OUT to its port cost no exit)", "does not work "+a.Notes["ioeventfd"]))
	fmt.Fprintf(tw, "KVM_IOEVENTFD on MMIO\t%s\n", yes(a.IOEventFDMMIO, "works (a 16-bit MMIO write cost no exit: virtio notifies)", "does not work "+a.Notes["ioeventfd_mmio"]))
	fmt.Fprintf(tw, "user-space exit round trip\t%.1f us (OUT, %s)\n", a.ExitRoundTripNs/1000, "this run only; compare only side by side")
	var missing []string
	for n, ok := range a.Caps {
		if !ok {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	fmt.Fprintf(tw, "capabilities\t%d of %d present%s\n", len(a.Caps)-len(missing), len(a.Caps), yes(len(missing) > 0, "; missing "+strings.Join(missing, ", "), ""))
	fmt.Fprintf(tw, "govmm uses (flags at auto)\tTSC-deadline mode %s, SYSCALL doorbell %s\n",
		yes(d.TSCDeadline, "advertised", "not advertised (one-shot LAPIC timer)"), yes(d.Doorbell, "on", "off"))
	tw.Flush()
}
