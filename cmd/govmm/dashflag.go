package main

import (
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/govmm/govmm/dashboard"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// dashFlags are the flags of run and boot that watch a running guest: the
// dashboard, the stall dump and the symbols that name RIPs in dumps.
type dashFlags struct {
	addr    *string
	remote  *bool
	token   *string
	stall   *time.Duration
	symFile *string
}

func addDashFlags(fs *flag.FlagSet) dashFlags {
	return dashFlags{
		addr: fs.String("dashboard", "", "serve the live dashboard, JSON API and /metrics at ADDR (e.g. "+
			dashboard.DefaultAddr+"); loopback only unless --dashboard-remote"),
		remote: fs.Bool("dashboard-remote", false, "let --dashboard listen on a non-loopback address"),
		token: fs.String("control-token-file", "", "with --dashboard: write a fresh random token to this file (mode 0600) and serve the control endpoint "+
			"(POST /api/v1/control/pause, /resume and, with --snapshot-dir, /snapshot, each with Authorization: Bearer TOKEN)"),
		stall: fs.Duration("stall-dump", time.Minute, "print every vCPU's state (as SIGUSR2 does) once no vCPU has exited for this long "+
			"while some are in guest mode (0: never)"),
		symFile: fs.String("symbols", "", "name guest kernel addresses in dumps from this System.map or ELF vmlinux "+
			"(default: the kernel's own symbol table, if it is an ELF image with one)"),
	}
}

// symbols reads --symbols; nil without it.
func (d dashFlags) symbols() (*ksyms.Table, error) {
	if *d.symFile == "" {
		return nil, nil
	}
	t, err := ksyms.Open(*d.symFile)
	if err != nil {
		return nil, fmt.Errorf("--symbols: %w", err)
	}
	return t, nil
}

// check refuses a --dashboard address that cannot be listened on: not
// host:port, a port out of range, or not loopback without
// --dashboard-remote (as dashboard.Server.Listen would, once the VM is
// built).
func (d dashFlags) check() error {
	if *d.addr == "" {
		if *d.token != "" {
			return fmt.Errorf("--control-token-file needs --dashboard (the control endpoint is the dashboard's)")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(*d.addr)
	if err != nil {
		return fmt.Errorf("--dashboard %s: not host:port (e.g. %s)", *d.addr, dashboard.DefaultAddr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		if _, err := net.LookupPort("tcp", port); err != nil {
			return fmt.Errorf("--dashboard %s: port %q is not a number from 0 to 65535", *d.addr, port)
		}
	}
	if a, err := netip.ParseAddr(host); !*d.remote && host != "localhost" && (err != nil || !a.Unmap().IsLoopback()) {
		return fmt.Errorf("--dashboard %s: not a loopback address (use 127.0.0.1, [::1] or localhost, or add --dashboard-remote)", *d.addr)
	}
	return nil
}

// start serves the dashboard of vm while it runs; the returned stop ends it.
// Listening happens here so that a bad address is an error before the
// guest starts.
func (d dashFlags) start(vm *vmm.VM, con *linuxguest.Console, info dashboard.Info, snap func() (vmm.SnapshotInfo, error), stderr io.Writer) (func(), error) {
	if *d.addr == "" {
		return func() {}, nil
	}
	opts := dashboard.Options{AllowRemote: *d.remote}
	if *d.token != "" {
		tok, err := writeControlToken(*d.token)
		if err != nil {
			return nil, err
		}
		opts.Control, opts.ControlToken = dashboard.VMControl(vm, snap), tok
	}
	srv := dashboard.New(dashboard.VMSource(vm, con, info), opts)
	l, err := srv.Listen(*d.addr)
	if err != nil {
		srv.Close()
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	fmt.Fprintf(stderr, "govmm: dashboard at http://%s/ (JSON at /api/v1/state, Prometheus at /metrics)\n", l.Addr())
	go srv.Serve(l)
	return func() { srv.Close() }, nil
}

// runVM runs vm to its end with the dashboard (if asked for), the SIGUSR2
// dump and the console input (a terminal in raw mode, its escapes and
// signals) around it: what run and boot share. The terminal is back in its
// own mode when runVM returns.
//
// Everything is open by then (the dashboard listening, console input
// started), so the sandbox (--sandbox, --user) goes on just before the
// guest runs.
func runVM(vm *vmm.VM, con *linuxguest.Console, info dashboard.Info, f vmFlags, in *consoleInput, timeout time.Duration, stderr io.Writer) (vmm.Result, error) {
	d := f.dash
	snap, stopSnap, err := f.snap.arm(vm, stderr)
	if err != nil {
		return vmm.Result{}, err
	}
	defer stopSnap()
	stopDash, err := d.start(vm, con, info, snap, stderr)
	if err != nil {
		return vmm.Result{}, err
	}
	defer stopDash()
	stopDump := make(chan struct{})
	dumpOnSIGUSR2(vm, stopDump)
	go watchStall(vmStallProbe(vm), *d.stall, stderr, stopDump)
	defer close(stopDump)
	endInput, err := in.start(vm.Stop, stderr)
	if err != nil {
		return vmm.Result{}, err
	}
	defer endInput()
	if err := f.sandbox.install(stderr); err != nil {
		return vmm.Result{}, err
	}
	return vm.Run(timeout), nil
}

// writeControlToken writes a fresh random token (32 bytes, hex) to path,
// readable by its owner only, and returns it.
func writeControlToken(path string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("--control-token-file: %w", err)
	}
	tok := hex.EncodeToString(b[:])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("--control-token-file: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", fmt.Errorf("--control-token-file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("--control-token-file: %w", err)
	}
	return tok, f.Close()
}
