package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// badInputs are mistakes on the command line with govmm's whole answer on
// stderr (one line; $D is the test's directory) and its exit status. Where
// a command opens KVM, --kvm names a device that does not exist ($D/kvm),
// so a value checked only after /dev/kvm is opened would be reported as
// "kvm unavailable" instead of as itself.
var badInputs = []struct {
	args   string
	want   string
	status int
}{
	{"fly", `unknown command "fly" (see 'govmm help')`, 2},
	{"help fly", `unknown command "fly" (see 'govmm help')`, 2},
	{"run", "run: needs a KERNEL image (see 'govmm run --help')", 2},
	{"run --fast $D/k.elf", "run: flag provided but not defined: -fast (see 'govmm run --help')", 2},
	{"run $D/k.elf rounds=2 --fast", "run: flag provided but not defined: -fast: not a flag of govmm run; a guest argument that looks like a flag goes after '--' (govmm run [flags] KERNEL -- ARGS)", 2},
	{"run $D/k.elf --cpus 2 --kvm $D/kvm", "kvm unavailable: cannot open $D/kvm: no such file or directory", 2},
	{"run --cpus two $D/k.elf", `run: invalid value "two" for flag -cpus: parse error (see 'govmm run --help')`, 2},
	{"run --x2apic=true $D/k.elf", `run: invalid value "true" for flag -x2apic: want off, physical, cluster or mixed (or xapic, x2apic-phys, x2apic-cluster) (see 'govmm run --help')`, 2},
	{"run --kvm $D/kvm --cpus 0 $D/k.elf", "cannot create 0 vCPUs: want 1 to 4096 (KVM's most on x86)", 2},
	{"run --kvm $D/kvm $D/k.elf --cpus 99999", "cannot create 99999 vCPUs: want 1 to 4096 (KVM's most on x86)", 2},
	{"run --kvm $D/kvm --x2apic=xapic --cpus 300 $D/k.elf", "300 vCPUs need x2APIC: xAPIC IDs stop at 254", 2},
	{"run --kvm $D/kvm --mem lots $D/k.elf", "--mem lots: want 2M to 1T, a multiple of 4K (K, M, G, T suffixes; a bare number is bytes)", 2},
	{"run --kvm $D/kvm --mem 2T $D/k.elf", "--mem 2T: want 2M to 1T, a multiple of 4K (K, M, G, T suffixes; a bare number is bytes)", 2},
	{"run --kvm $D/kvm --mem 512 $D/k.elf", "--mem 512: want 2M to 1T, a multiple of 4K (K, M, G, T suffixes; a bare number is bytes)", 2},
	{"run --kvm $D/kvm --disk /nonexistent $D/k.elf", "--disk /nonexistent: no such file or directory", 2},
	{"run --kvm $D/kvm --disk $D $D/k.elf", "--disk $D: is a directory, not a disk image", 2},
	{"run --disk img,rx $D/k.elf", `run: invalid value "img,rx" for flag -disk: --disk="img,rx": unknown option "rx" (ro or rw) (see 'govmm run --help')`, 2},
	{"run --kvm $D/kvm $D/nope.elf", "cannot read kernel image: open $D/nope.elf: no such file or directory", 2},
	{"run --kvm $D/kvm $D/passwd", "$D/passwd: not a kernel: neither a Multiboot kernel (no Multiboot header in its first 8 KiB) nor a Linux bzImage or ELF vmlinux", 2},
	{"run --kvm $D/kvm $D/k.elf", "kvm unavailable: cannot open $D/kvm: no such file or directory", 2},
	{"run --halt-poll -1ms $D/k.elf", "run: --halt-poll=-1ms: want a duration of 0 or more (see 'govmm run --help')", 2},
	{"run $D/k.elf --timeout -1s", "run: --timeout=-1s: want a duration of 0 or more (see 'govmm run --help')", 2},
	{"run --kvm $D/kvm --user nosuchuser-govmm $D/k.elf", "--user nosuchuser-govmm: no such user", 2},
	{"run --kvm $D/kvm --sandbox off --user root $D/k.elf", "--user root needs --sandbox on", 2},
	{"run --kvm $D/kvm --json /nodir/x $D/k.elf", "--json /nodir/x: directory /nodir: no such file or directory", 2},
	{"run --kvm $D/kvm --json $D $D/k.elf", "--json $D: is a directory", 2},
	{"run --kvm $D/kvm --dashboard :99999 $D/k.elf", `--dashboard :99999: port "99999" is not a number from 0 to 65535`, 2},
	{"run --kvm $D/kvm --dashboard 0.0.0.0:8411 $D/k.elf", "--dashboard 0.0.0.0:8411: not a loopback address (use 127.0.0.1, [::1] or localhost, or add --dashboard-remote)", 2},
	{"run --kvm $D/kvm --dashboard 8411 $D/k.elf", "--dashboard 8411: not host:port (e.g. 127.0.0.1:8411)", 2},
	{"run --kvm $D/kvm --tsc-deadline yes $D/k.elf", `--tsc-deadline="yes": want auto, on or off`, 2},
	{"run --lapic=qemu $D/k.elf", `run: invalid value "qemu" for flag -lapic: --lapic="qemu": want govmm or kvm (see 'govmm run --help')`, 2},
	{"run --kvm $D/kvm --lapic=kvm --avic $D/k.elf", "--avic with --lapic=kvm: AVIC-style delivery is govmm's LAPIC's; KVM's LAPIC posts interrupts itself where the host has APICv or AVIC", 2},
	{"boot --kvm $D/kvm --lapic=kvm --avic", "--avic with --lapic=kvm: AVIC-style delivery is govmm's LAPIC's; KVM's LAPIC posts interrupts itself where the host has APICv or AVIC", 2},
	{"run --kvm $D/kvm --control-token-file $D/tok $D/k.elf", "--control-token-file needs --dashboard (the control endpoint is the dashboard's)", 2},
	{"run --kvm $D/kvm --snapshot-at 1s $D/k.elf", "--snapshot-at needs --snapshot-dir (where to save)", 2},
	{"run --kvm $D/kvm --snapshot-at -1s --snapshot-dir $D/s $D/k.elf", "run: --snapshot-at=-1s: want a duration of 0 or more (see 'govmm run --help')", 2},
	{"restore", "restore: needs one snapshot directory DIR (see 'govmm restore --help')", 2},
	{"restore $D/nosnap", "snapshot $D/nosnap: no manifest: open $D/nosnap/manifest.json: no such file or directory", 2},
	{"bench-rtt --lapic=xen", `--lapic="xen": want govmm or kvm`, 2},
	{"run --kvm $D/kvm --cpu-affinity 0,x $D/k.elf", `--cpu-affinity=0,x: "x" is not a host CPU number`, 2},
	{"run --kvm $D/kvm --cpu-affinity 100000 $D/k.elf", "--cpu-affinity: host CPU 100000 is not one this process may run on (taskset -p $$ lists them)", 2},
	{"bench-rtt --cpu-affinity -1", `--cpu-affinity=-1: "-1" is not a host CPU number`, 2},
	{"boot --kernal $D/k.elf", "boot: flag provided but not defined: -kernal (see 'govmm boot --help')", 2},
	{"boot quiet", `boot: takes no arguments (got "quiet"); kernel arguments go in --append (see 'govmm boot --help')`, 2},
	{"boot --kvm $D/kvm -- quiet", `boot: takes no arguments (got "quiet"); kernel arguments go in --append (see 'govmm boot --help')`, 2},
	{"boot --x2apic=flat", `boot: invalid value "flat" for flag -x2apic: want off, physical, cluster or mixed (or xapic, x2apic-phys, x2apic-cluster) (see 'govmm boot --help')`, 2},
	{"boot --kvm $D/kvm --x2apic=off --cpus 300", "--x2apic=off with 300 vCPUs: xAPIC IDs stop at 254", 2},
	{"boot --kvm $D/kvm --mem 0 --kernel /nonexistent", "--mem 0: want 2M to 1T, a multiple of 4K (K, M, G, T suffixes; a bare number is bytes)", 2},
	{"boot --kvm $D/kvm --kernel /nonexistent", "cannot read kernel image: open /nonexistent: no such file or directory", 2},
	{"boot --kvm $D/kvm --kernel $D/passwd", "$D/passwd: not a kernel: neither a Multiboot kernel (no Multiboot header in its first 8 KiB) nor a Linux bzImage or ELF vmlinux", 2},
	{"boot --kvm $D/kvm --kernel $D/k.elf --initrd /nonexistent", "cannot read initramfs: open /nonexistent: no such file or directory", 2},
	{"boot --kvm $D/kvm --disk /nonexistent", "--disk /nonexistent: no such file or directory", 2},
	{"boot --kvm $D/kvm --console vga --kernel $D/k.elf", `--console "vga": want auto, serial or virtio`, 2},
	{"boot --sandbox maybe", `--sandbox "maybe": want on or off`, 2},
	{"boot --timeout=-1s", "boot: --timeout=-1s: want a duration of 0 or more (see 'govmm boot --help')", 2},
	{"map --x2apic=false $D/k.elf", `map: invalid value "false" for flag -x2apic: want off, physical, cluster or mixed (or xapic, x2apic-phys, x2apic-cluster) (see 'govmm map --help')`, 2},
	{"map --kvm $D/kvm $D/k.elf --cpus 99999", "cannot create 99999 vCPUs: want 1 to 4096 (KVM's most on x86)", 2},
	{"map $D/k.elf $D/k.elf", "map: needs one KERNEL image (see 'govmm map --help')", 2},
	{"map --kvm $D/kvm --json=/nodir/x $D/k.elf", "--json /nodir/x: directory /nodir: no such file or directory", 2},
	{"host --json=/nodir/x", "--json /nodir/x: directory /nodir: no such file or directory", 2},
	{"host now", `host: takes no arguments (got "now") (see 'govmm host --help')`, 2},
	{"host --kvm $D/kvm", "cannot probe $D/kvm: probe refused by the test", 2}, // the probe honours --kvm (probing)
	{"top x", `top: takes no arguments (got "x") (see 'govmm top --help')`, 2},
	{"top --interval -1s", "top: --interval=-1s: want a duration of 0 or more (see 'govmm top --help')", 2},
	{"bench-rtt --rounds", "bench-rtt: flag needs an argument: -rounds (see 'govmm bench-rtt --help')", 2},
	{"bench-ipi --cpus 1", "--cpus 1: want 2 to 1024", 2},
	{"bench-ipi --timeout -1s", "bench-ipi: --timeout=-1s: want a duration of 0 or more (see 'govmm bench-ipi --help')", 2},
	{"bench-ipi --modes physical,flat", `--modes: unknown mode "flat" (want xapic-phys, xapic-flat, xapic-cluster, x2apic-phys or physical, x2apic-cluster or cluster, mixed, pv or pv-ipi)`, 2},
	{"bench-rtt --delivery plain,posted", `--delivery: unknown delivery path "posted" (want plain, pveoi (or pv-eoi) or avic)`, 2},
	{"bench --modes pv+pveoi,x2apic-phys,banana", `--modes: unknown mode "banana" (want off, physical, cluster, mixed, pv-ipi, pv-ipi+eoi, cluster+eoi or cluster+avic)`, 2},
	{"bench-exits now", `bench-exits: takes no arguments (got "now") (see 'govmm bench-exits --help')`, 2},
	{"bench-seeds", "bench-seeds: takes one EXPERIMENT (mixed, pv-ipi, x2apic or all), got 0 arguments (see 'govmm bench-seeds --help')", 2},
	{"bench-seeds mixd", `bench-seeds: unknown experiment "mixd" (want mixed, pv-ipi, x2apic or all) (see 'govmm bench-seeds --help')`, 2},
	{"bench-seeds mixed x2apic", "bench-seeds: takes one EXPERIMENT (mixed, pv-ipi, x2apic or all), got 2 arguments (see 'govmm bench-seeds --help')", 2},
	{"bench-seeds mixed --samples 1", "--samples 1: Student's t needs at least 2 samples per mode", 2},
	{"bench-seeds mixed --cpus 1", "--cpus 1: every experiment sends IPIs between CPUs; give 2 or more", 2},
	{"bench-seeds mixed --cpus 2000", "--cpus 2000: govmm's guest kernel is built for at most 1024 CPUs (NR_CPUS)", 2},
	{"bench-seeds x2apic --loops -3", "--loops must be positive (0: the experiment's default)", 2},
	{"nested --host arm -- true", `unknown nested host "arm" (amd or intel)`, 2},
	{"nested", "nested: no command given (see 'govmm nested --help')", 2},
	{"nested --host intel --mem 3G -- true", "--mem 3G: want 256M or more, and at most 2G on the intel host (Bochs 2.7's limit)", 2},
}

// probing are the bad inputs that probe the host, and the device probed.
var probing = map[string]string{"host --kvm $D/kvm": "$D/kvm"}

// TestBadInputIsOneLine: every mistake in badInputs is its one line on
// stderr, nothing on stdout, and its exit status, on any machine; none of
// them but probing's probes the host (vmm.Host), and none opens a KVM
// device that exists.
func TestBadInputIsOneLine(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"k.elf": "\x7fELF not really", "passwd": "root:x:0:0:root:/root:/bin/sh\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	probes := spyOnProbe(t)
	for _, c := range badInputs {
		args := strings.Fields(strings.ReplaceAll(c.args, "$D", dir))
		want := "govmm: " + strings.ReplaceAll(c.want, "$D", dir) + "\n"
		t.Run(c.args, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			status := run(args, &stdout, &stderr)
			if status != c.status || stderr.String() != want || stdout.Len() != 0 {
				t.Errorf("govmm %s: status %d, stderr %q, stdout %q\nwant status %d, stderr %q", c.args, status, stderr.String(), stdout.String(), c.status, want)
			}
			if got, want := strings.Join(*probes, " "), strings.ReplaceAll(probing[c.args], "$D", dir); got != want {
				t.Errorf("govmm %s probed the host at %q, want %q", c.args, got, want)
			}
			*probes = nil
		})
	}
}

// spyOnProbe replaces the host probe (of /dev/kvm and of another --kvm
// device) for the test: the returned list grows with every device probed.
func spyOnProbe(t *testing.T) *[]string {
	var probed []string
	saved, savedAt, savedHost := defaultHost, probeAt, vmm.Host
	probeAt = func(path string) (hostprobe.Answers, error) {
		probed = append(probed, path)
		return hostprobe.Answers{}, errors.New("probe refused by the test")
	}
	defaultHost = func() (hostprobe.Answers, error) { return probeAt("/dev/kvm") }
	vmm.Host = defaultHost
	t.Cleanup(func() { defaultHost, probeAt, vmm.Host = saved, savedAt, savedHost })
	return &probed
}

// TestSignalStatus: a signal that stopped the guest ends govmm with 128 +
// its number, as a shell reports a process the signal killed, its cause in
// one line.
func TestSignalStatus(t *testing.T) {
	for how, want := range map[string]int{"signal: interrupt": 130, "signal: terminated": 143, "signal: hangup": 129, "signal: quit": 131} {
		user, err := stoppedBy(how)
		commands["test-signal"] = func([]string, io.Writer, io.Writer) (int, error) { return 0, err }
		var stdout, stderr bytes.Buffer
		status := run([]string{"test-signal"}, &stdout, &stderr)
		delete(commands, "test-signal")
		if user || status != want || stderr.String() != "govmm: stopped by "+how+"\n" {
			t.Errorf("stopped by %s: status %d, stderr %q; want %d", how, status, stderr.String(), want)
		}
	}
	if user, err := stoppedBy("user"); !user || err != nil {
		t.Errorf("Ctrl-A x: user %v, err %v", user, err)
	}
}

// TestHelpAndVersion: -h, --help and 'govmm help CMD' print the command's
// flags on stdout and succeed; --version names the module and the Go
// toolchain.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"run", "-h"}, {"help", "run"}, {"run", "--help"}, {"run", "k.elf", "--help"}} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 0 || stderr.Len() != 0 {
			t.Fatalf("govmm %v: status %d, stderr %s", args, status, stderr.String())
		}
		for _, want := range []string{"usage: govmm run [flags] KERNEL", "-x2apic value", "-cpus int", "Ctrl-A x"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("govmm %v lacks %q:\n%s", args, want, stdout.String())
			}
		}
	}
	for cmd, args := range map[string][]string{"boot": {"help", "boot"}, "boot ": {"boot", "--help"}, "bench-ipi": {"bench-ipi", "-h"}} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 0 || stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), "usage: govmm "+strings.TrimSpace(cmd)) {
			t.Errorf("govmm %v: status %d, stdout %q, stderr %q: want the usage on stdout", args, status, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if status := run([]string{"--version"}, &stdout, &stderr); status != 0 || !strings.HasPrefix(stdout.String(), "govmm ") ||
		!strings.Contains(stdout.String(), "go1.") {
		t.Errorf("govmm --version: status %d, %q", status, stdout.String())
	}
}

// TestFlagsAnywhere: govmm's flags are read before and after KERNEL, and
// what follows "--" is the guest's, flags or not.
func TestFlagsAnywhere(t *testing.T) {
	o, err := parseRunFlags(strings.Fields("--cpus 2 k.elf rounds=3 --timeout 1s --quiet -- --cpus 4 -x"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.cpus != 2 || !o.quiet || o.timeout.String() != "1s" || o.kernelPath != "k.elf" ||
		strings.Join(o.guestArgs, " ") != "rounds=3 --cpus 4 -x" {
		t.Errorf("cpus %d quiet %v timeout %v kernel %q guest args %q", o.cpus, o.quiet, o.timeout, o.kernelPath, o.guestArgs)
	}
	o, err = parseRunFlags(strings.Fields("--append -- k.elf --x2apic x2apic-phys"), io.Discard)
	if err == nil {
		t.Errorf("run --append: accepted (run has no --append): %+v", o)
	}
	if b, err := parseBootFlags(strings.Fields("--append -- --x2apic x2apic-cluster --kvm /x"), io.Discard); err != nil ||
		b.appendArgs != "--" || b.mode != "cluster" || *b.kvmPath != "/x" {
		t.Errorf("boot --append -- ...: %v, %+v", err, b)
	}
}
