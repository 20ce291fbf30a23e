package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// vmFlags are the flags run and boot share: the dashboard, dumps and
// symbols (dashFlags), the host probe's overrides, the console input, the
// disk, the sandbox, the KVM device and the JSON report.
type vmFlags struct {
	dash      dashFlags
	hostFlags func(*vmm.Config) error
	conIn     consoleFlag
	// disk is --disk: the virtio-blk image (no Path: none).
	disk    *vmm.Disk
	sandbox sandboxFlags
	kvmPath *string
	jsonOut *string
	snap    snapFlags
}

func addVMFlags(fs *flag.FlagSet) vmFlags {
	disk := &vmm.Disk{}
	fs.Func("disk", "a raw disk image for a virtio-blk device with one queue per vCPU: FILE, FILE,ro (read-only) or FILE,rw",
		func(s string) (err error) { *disk, err = vmm.ParseDisk(s); return err })
	return vmFlags{dash: addDashFlags(fs), hostFlags: addHostFlags(fs), conIn: addConsoleFlag(fs), disk: disk,
		sandbox: addSandboxFlags(fs), kvmPath: addKVMFlag(fs), snap: addSnapFlags(fs),
		jsonOut: fs.String("json", "", "also write the accounting and the exit bus map as JSON to FILE (stdout is the guest's console)")}
}

// addKVMFlag declares --kvm, the KVM device: the VM's and the host probe's.
func addKVMFlag(fs *flag.FlagSet) *string {
	return fs.String("kvm", "/dev/kvm", "the KVM device, for the VM and for the host probe (govmm host) that configures it")
}

// check refuses, before the kernel is read, /dev/kvm opened or the host
// probed, what the flags name that cannot be used: a bad --sandbox or
// --user, a --disk that is no file, a --json FILE that cannot be created,
// a --dashboard address that cannot be listened on; and points the host
// probe at --kvm.
func (f vmFlags) check() error {
	if err := f.sandbox.check(); err != nil {
		return err
	}
	if err := checkDisk(f.disk.Path); err != nil {
		return err
	}
	if err := checkCreatable("--json", *f.jsonOut); err != nil {
		return err
	}
	if err := f.dash.check(); err != nil {
		return err
	}
	if err := f.snap.check(); err != nil {
		return err
	}
	useKVM(*f.kvmPath)
	return nil
}

// checkDisk refuses a --disk image that is missing or not a file.
func checkDisk(path string) error {
	if path == "" {
		return nil
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("--disk %s: %v", path, pathErr(err))
	case fi.IsDir():
		return fmt.Errorf("--disk %s: is a directory, not a disk image", path)
	}
	return nil
}

// checkCreatable refuses a file to write (flag's value path) whose
// directory is missing or not writable, or that is a directory.
func checkCreatable(flag, path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s %s: is a directory", flag, path)
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%s %s: directory %s: %v", flag, path, dir, pathErr(err))
	} else if !fi.IsDir() {
		return fmt.Errorf("%s %s: %s is not a directory", flag, path, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("%s %s: cannot create a file in %s: %v", flag, path, dir, err)
	}
	return nil
}

// pathErr is err without the path a *fs.PathError repeats.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// defaultHost is vmm.Host as vmm declares it: the probe of /dev/kvm.
var defaultHost = vmm.Host

// probeAt probes the KVM at path (a test sees whether it was called).
var probeAt = func(path string) (hostprobe.Answers, error) { return hostprobe.Probe(path, nil) }

// useKVM points the host probe (vmm.Host, run when first asked) at the
// KVM device path, as the VM's --kvm. Another device than /dev/kvm is
// probed without the claimed MSRs (govmm host on /dev/kvm lists them).
func useKVM(path string) {
	if path == "" || path == "/dev/kvm" {
		vmm.Host = defaultHost
		return
	}
	vmm.Host = sync.OnceValues(func() (hostprobe.Answers, error) { return probeAt(path) })
}
