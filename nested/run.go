package nested

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Host is the kind of nested host.
type Host int

const (
	AMD   Host = iota // QEMU TCG -cpu max, kvm_amd
	Intel             // Bochs, kvm_intel
)

func (h Host) String() string {
	if h == Intel {
		return "intel"
	}
	return "amd"
}

// Describe names the host for messages.
func (h Host) Describe() string {
	if h == Intel {
		return "nested VT-x host (Bochs, kvm_intel)"
	}
	return "nested AMD-V host (QEMU TCG, kvm_amd)"
}

// ParseHost reads "amd" or "intel".
func ParseHost(s string) (Host, error) {
	switch strings.ToLower(s) {
	case "amd", "amd-v", "svm":
		return AMD, nil
	case "intel", "vt-x", "vmx":
		return Intel, nil
	}
	return 0, fmt.Errorf("unknown nested host %q (amd or intel)", s)
}

// Options says what to run and where.
type Options struct {
	Host    Host
	Cache   string   // the cache directory (the image is built under Cache/nested)
	Command []string // argv of the command, run by /bin/sh's exec
	Dir     string   // its working directory (default: this process's)
	Env     []string // its environment (default: this process's)
	// Shares are directories mounted read-write at their own paths (AMD;
	// the rest of / is read-only). Cache is always shared.
	Shares []string
	// Files are copied into the initramfs at their own paths (Intel:
	// directories whole). The command's binary must be among them.
	Files   []string
	Timeout time.Duration // 0: none
	MemMiB  int           // L1's RAM (default 6144 for AMD, 2048 for Intel)
	CPUs    int           // L1's CPUs (AMD; default 2)
	// MultiThreadTCG runs QEMU with one host thread per L1 CPU. Off by
	// default: QEMU 7.2's SVM emulation lost interrupts under it that
	// single-threaded TCG did not (docs/hosts.md).
	MultiThreadTCG bool
	// PreemptionTimer (Intel) tells L1 its TSC rate (tsc_early_khz), without
	// which kvm_intel leaves VMX's preemption timer off.
	PreemptionTimer bool
	KVMParams       string    // parameters for kvm_amd / kvm_intel
	Verbose         bool      // show L1's own boot on Stderr
	Stdout, Stderr  io.Writer // the command's output; govmm-nested's own lines
}

// run is one boot of L1.
type run struct {
	opt   Options
	nonce string
	img   *image
	tmp   string // the run's scratch directory under the cache
}

// Run boots the nested host, runs the command and returns its exit status.
func Run(ctx context.Context, opt Options) (int, error) {
	if len(opt.Command) == 0 {
		return 0, errors.New("no command to run in the nested host")
	}
	if opt.Cache == "" {
		return 0, errors.New("no cache directory for the nested host's image")
	}
	if opt.Stdout == nil {
		opt.Stdout = os.Stdout
	}
	if opt.Stderr == nil {
		opt.Stderr = os.Stderr
	}
	if opt.Dir == "" {
		opt.Dir, _ = os.Getwd()
	}
	if opt.Env == nil {
		opt.Env = os.Environ()
	}
	if opt.CPUs == 0 {
		opt.CPUs = 2
		if opt.Host == Intel {
			opt.CPUs = 1 // what has been measured; Bochs's SMP is its own loop
		}
	}
	if opt.MemMiB == 0 {
		opt.MemMiB = 6144
		if opt.Host == Intel {
			opt.MemMiB = 2048 // Bochs 2.7 takes no more
		}
	}
	emu, err := emulatorFor(opt.Host)
	if err != nil {
		return 0, err
	}
	logf := func(f string, a ...any) { fmt.Fprintf(opt.Stderr, f+"\n", a...) }
	img, err := buildImage(opt.Cache, opt.Host, logf)
	if err != nil {
		return 0, fmt.Errorf("building the %s: %w", opt.Host.Describe(), err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	r := &run{opt: opt, nonce: hex.EncodeToString(b), img: img}
	r.tmp = filepath.Join(opt.Cache, "nested", "run-"+r.nonce)
	if err := os.MkdirAll(r.tmp, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(r.tmp)
	initrd, err := r.initrd()
	if err != nil {
		return 0, err
	}
	if opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
	}
	wait, console, err := emu.start(ctx, r, initrd)
	if err != nil {
		return 0, err
	}
	status, serr := r.follow(console)
	go io.Copy(io.Discard, console) // what L1 prints while it powers off
	werr := wait()
	if ctx.Err() == context.DeadlineExceeded {
		return 0, fmt.Errorf("the command did not finish within %v in the %s: stopped it", opt.Timeout, opt.Host.Describe())
	}
	if ctx.Err() != nil {
		return 0, fmt.Errorf("the %s was stopped: %w", opt.Host.Describe(), ctx.Err())
	}
	if serr != nil {
		if werr != nil {
			return 0, fmt.Errorf("%w (%s: %v)", serr, emu.name(), werr)
		}
		return 0, serr
	}
	return status, nil
}

// initrd writes the run's initramfs: the image's base archive and, after
// it, one with /run.conf, /cmd.sh and (Intel) the files.
func (r *run) initrd() (string, error) {
	base, err := os.ReadFile(r.img.Base)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	buf.Write(base)
	w := newCPIO(&buf)
	w.file("run.conf", 0o644, []byte(r.config()))
	w.file("cmd.sh", 0o755, []byte(r.script()))
	if r.opt.Host == Intel {
		w.mkdirAll(r.opt.Dir)
		for _, f := range r.opt.Files {
			if err := addTree(w, f); err != nil {
				return "", err
			}
		}
	}
	if err := w.close(); err != nil {
		return "", err
	}
	p := filepath.Join(r.tmp, "initrd.cpio")
	return p, os.WriteFile(p, buf.Bytes(), 0o644)
}

// addTree copies a file or a directory tree into the archive at its path.
func addTree(w *cpioWriter, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return filepath.Walk(abs, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return fmt.Errorf("a file for the nested host: %w", err)
		}
		switch {
		case fi.IsDir():
			w.mkdirAll(p)
		case fi.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			w.mkdirAll(filepath.Dir(p))
			w.symlink(p, t)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			w.file(p, int(fi.Mode().Perm()), b)
		}
		return nil
	})
}

// config is /run.conf.
func (r *run) config() string {
	var s strings.Builder
	fmt.Fprintf(&s, "NONCE=%s\nMODULES=%s\nKVMPARAMS=%s\n", r.nonce, shellQuote(strings.Join(r.img.Modules, " ")), shellQuote(r.opt.KVMParams))
	if r.opt.Host == AMD {
		var shares []string
		for i, d := range r.shares() {
			shares = append(shares, fmt.Sprintf("share%d:%s", i, d))
		}
		fmt.Fprintf(&s, "ROOTTAG=hostroot\nSHARES=%s\n", shellQuote(strings.Join(shares, " ")))
	} else {
		s.WriteString("ROOTTAG=\nSHARES=\n")
	}
	return s.String()
}

// shares are the read-write directories, resolved, without duplicates or
// directories inside another share.
func (r *run) shares() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range append([]string{r.opt.Cache}, r.opt.Shares...) {
		if p, err := filepath.EvalSymlinks(d); err == nil {
			d = p
		}
		d, _ = filepath.Abs(d)
		if d == "/" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// script is /cmd.sh: the working directory, the environment and the
// command.
func (r *run) script() string {
	var s strings.Builder
	s.WriteString("cd " + shellQuote(r.opt.Dir) + " || exit 125\n")
	for _, kv := range r.opt.Env {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || !envName.MatchString(k):
			continue
		case k == "PWD" || k == "OLDPWD" || k == "SHLVL" || k == "_":
			continue
		}
		s.WriteString("export " + k + "=" + shellQuote(v) + "\n")
	}
	s.WriteString("exec")
	for _, a := range r.opt.Command {
		s.WriteString(" " + shellQuote(a))
	}
	s.WriteString("\n")
	return s.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// follow copies the command's output from L1's console to Stdout until
// L1 reports the exit status, and keeps L1's own boot for errors.
func (r *run) follow(console io.Reader) (int, error) {
	marker := "@@" + r.nonce + " "
	br := bufio.NewReaderSize(console, 64<<10)
	var boot []string // L1's lines before the command started
	started := false
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			text := strings.TrimRight(line, "\r\n")
			if i := strings.Index(text, marker); i >= 0 {
				if i > 0 && started { // output without a newline before the marker
					fmt.Fprintln(r.opt.Stdout, text[:i])
				}
				if st, done, err := r.tagged(text[i+len(marker):]); done {
					return st, err
				}
				if text[i+len(marker):] == "start" {
					started = true
				}
			} else if started {
				io.WriteString(r.opt.Stdout, text+"\n")
			} else {
				if r.opt.Verbose {
					fmt.Fprintln(r.opt.Stderr, "L1: "+text)
				}
				boot = append(boot, text)
				if len(boot) > 40 {
					boot = boot[1:]
				}
			}
		}
		if err != nil {
			last := ""
			for i := len(boot) - 1; i >= 0 && last == ""; i-- {
				last = strings.TrimSpace(boot[i])
			}
			if started {
				return 0, fmt.Errorf("the %s stopped before the command reported its exit status", r.opt.Host.Describe())
			}
			if last == "" {
				return 0, fmt.Errorf("the %s stopped before its /init ran (no console output)", r.opt.Host.Describe())
			}
			return 0, fmt.Errorf("the %s stopped before the command started; L1's last console line: %q", r.opt.Host.Describe(), last)
		}
	}
}

// tagged handles one of /init's own lines.
func (r *run) tagged(s string) (status int, done bool, err error) {
	switch {
	case strings.HasPrefix(s, "status "):
		n, perr := strconv.Atoi(strings.TrimPrefix(s, "status "))
		if perr != nil {
			return 0, true, fmt.Errorf("the %s reported a bad status %q", r.opt.Host.Describe(), s)
		}
		return n, true, nil
	case strings.HasPrefix(s, "error "):
		return 0, true, fmt.Errorf("%s: %s", r.opt.Host.Describe(), strings.TrimPrefix(s, "error "))
	case strings.HasPrefix(s, "kernel "):
		fmt.Fprintf(r.opt.Stderr, "nested %s L1 kernel: %s\n", r.opt.Host, strings.TrimPrefix(s, "kernel "))
	case strings.HasPrefix(s, "kvm "):
		if r.opt.Verbose {
			fmt.Fprintf(r.opt.Stderr, "nested: /dev/kvm is up in the %s (nested=%s)\n", r.opt.Host.Describe(), strings.TrimPrefix(s, "kvm "))
		}
	}
	return 0, false, nil
}

// emulator starts L1 under QEMU or Bochs and returns its console.
type emulator interface {
	name() string
	// start boots L1; wait returns once the emulator has exited.
	start(ctx context.Context, r *run, initrd string) (wait func() error, console io.Reader, err error)
}

func emulatorFor(h Host) (emulator, error) {
	if h == Intel {
		return newBochs()
	}
	return newQEMU()
}

// lookBinary finds an emulator's program or says which package has it.
func lookBinary(prog, pkg string) (string, error) {
	p, err := exec.LookPath(prog)
	if err != nil {
		return "", fmt.Errorf("%s not found: install Debian's %s (make nested-deps does)", prog, pkg)
	}
	return p, nil
}

// waitKill makes a command's context cancellation end it at once.
func waitKill(cmd *exec.Cmd) {
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	cmd.WaitDelay = 5 * time.Second
}
