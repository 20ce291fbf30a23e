package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/govmm/govmm/nested"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// cmdNested is 'govmm nested': run one command inside a nested KVM host
// (package nested), with its output streamed and its exit status returned.
func cmdNested(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("nested", `usage: govmm nested [flags] [--] COMMAND [ARGS...]

Boots a nested KVM host, a Linux L1 under an emulator that offers hardware
virtualization, where KVM's own SVM (--host amd: QEMU TCG, kvm_amd) or VMX
(--host intel: Bochs, kvm_intel) code gives /dev/kvm, and runs COMMAND
there; its exit status is govmm nested's. With --host amd the machine's /
is visible read-only and the work tree and the cache read-write; with
--host intel only the files given with --file are there (static binaries).
The L1 image is built once from Debian's packages and cached.

flags:`, "", stderr)
	host := fs.String("host", "amd", "the nested host: amd (QEMU TCG, kvm_amd) or intel (Bochs, kvm_intel)")
	timeout := fs.Duration("timeout", 2*time.Hour, "stop L1 when COMMAND has not finished after this long (0: never)")
	memSize := fs.String("mem", "", "L1's RAM, as run's --mem (default 6G amd, 2G intel: Bochs's most)")
	cpus := fs.Int("cpus", 0, "L1's CPUs (default 2 amd, 1 intel)")
	tcg := fs.String("tcg", "single", "QEMU's TCG threading (amd): single or multi (multi lost interrupts in QEMU 7.2's SVM: docs/hosts.md)")
	timer := fs.String("preemption-timer", "on", "intel: on tells L1 its TSC rate so kvm_intel uses VMX's preemption timer; off leaves it off")
	kvmParams := fs.String("kvm-params", "", "parameters for kvm_amd / kvm_intel (e.g. preemption_timer=0)")
	cache := fs.String("cache", cacheDir(), "the cache directory: the L1 image is built under CACHE/nested")
	verbose := fs.Bool("v", false, "show L1's own boot")
	var shares, files stringList
	fs.Var(&shares, "share", "amd: a directory mounted read-write (repeatable; default the git work tree of the current directory; the cache always)")
	fs.Var(&files, "file", "intel: a file or directory copied in at its own path (repeatable); COMMAND's program must be one")
	if err := parseFlags(fs, args); err != nil {
		return 0, err
	}
	h, err := nested.ParseHost(*host)
	if err != nil {
		return 0, err
	}
	if fs.NArg() == 0 {
		return 0, usageErr("nested", "no command given")
	}
	mem := 0 // MiB; 0: the host's default
	if *memSize != "" {
		size, err := parseSize(*memSize)
		if err != nil {
			return 0, err
		}
		mem = int(size >> 20)
	}
	if *tcg != "single" && *tcg != "multi" {
		return 0, fmt.Errorf("--tcg=%q: want single or multi", *tcg)
	}
	if *timer != "on" && *timer != "off" {
		return 0, fmt.Errorf("--preemption-timer=%q: want on or off", *timer)
	}
	if *memSize != "" && (mem < 256 || (h == nested.Intel && mem > 2048)) {
		return 0, fmt.Errorf("--mem %s: want 256M or more, and at most 2G on the intel host (Bochs 2.7's limit)", *memSize)
	}
	if *cpus < 0 || *cpus > 64 {
		return 0, fmt.Errorf("--cpus %d: want 1 to 64", *cpus)
	}
	if h == nested.AMD && len(shares) == 0 {
		shares = append(shares, workTree())
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return 0, fmt.Errorf("--file %s: %w", f, err)
		}
	}
	opt := nested.Options{
		Host: h, Cache: *cache, Command: fs.Args(), Shares: shares, Files: files,
		Timeout: *timeout, MemMiB: mem, CPUs: *cpus, MultiThreadTCG: *tcg == "multi",
		PreemptionTimer: *timer == "on", KVMParams: *kvmParams, Verbose: *verbose,
		Stdout: stdout, Stderr: stderr,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return nested.Run(ctx, opt)
}

// workTree is the git work tree holding the current directory, or the
// current directory itself.
func workTree() string {
	wd, _ := os.Getwd()
	if out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			return d
		}
	}
	return filepath.Clean(wd)
}
