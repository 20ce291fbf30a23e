package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/govmm/govmm/accounting"
)

// TestBootSandboxed boots govmm's kernel with the govmm binary, whose
// sandbox is on by default (package sandbox: the seccomp allowlist on every
// thread once the VM is built; the in-process boots of linux_test.go leave
// it off, since the filter would stay on the test process), to the u-root
// shell with a disk: everything a Linux guest makes govmm do (virtio-blk
// I/O and flushes, queue eventfds, the virtio console, console input, the
// report and its JSON) runs under the filter, and a disk file the guest
// writes reaches the image.
func TestBootSandboxed(t *testing.T) {
	t.Parallel()
	needKVM(t)
	bin := govmmBin(t)
	kernel := filepath.Join(cacheDir(), "linux", "vmlinux")
	if _, err := os.Stat(kernel); err != nil {
		t.Skipf("SKIP: govmm's guest kernel is not built (make kernel): %v", err)
	}
	disk := makeDisk(t, map[string]string{"host.txt": "written by the host, read under the sandbox\n"}, 8, 16)
	off, n := disk.scratch()
	report := filepath.Join(t.TempDir(), "report.json")
	script := strings.Join([]string{"mkdir /mnt", "mount -t ext2 /dev/vda /mnt", "cat /mnt/host.txt",
		"echo guest-$((6*7)) > /mnt/guest.txt", "umount /mnt",
		fmt.Sprintf("blkbench -n 8 -depth 4 -rw both -offset %d -size %d", off, n)}, "; ")
	ctx, cancel := context.WithTimeout(context.Background(), linuxBootLimit(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "boot", "--cpus", "2", "--x2apic", "cluster", "--disk", disk.path,
		"--json", report, "--exec", script, "--timeout", "0")
	cmd.Env = append(os.Environ(), "GOVMM_CACHE="+cacheDir())
	out, err := cmd.CombinedOutput()
	log := string(out)
	if err != nil {
		t.Fatalf("govmm boot: %v\n%s", err, tail(log, 4000))
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^govmm: sandbox: seccomp allowlist of \d+ system calls on every thread.*probe socket\(2\) refused: operation not permitted`),
		regexp.MustCompile(`written by the host, read under the sandbox`),
		regexp.MustCompile(`(?m)^blkbench: irq-exits/io \d`),
		regexp.MustCompile(`ended by poweroff`),
	} {
		if !want.MatchString(log) {
			t.Errorf("output lacks %s:\n%s", want, tail(log, 4000))
		}
	}
	if got, ok := readDiskFile(t, disk, "guest.txt"); got != "guest-42\n" {
		t.Errorf("the guest's file reads back %q (found %v), want %q", got, ok, "guest-42\n")
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r accounting.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("--json report: %v", err)
	}
	var blk *accounting.DeviceReport
	for i := range r.Devices {
		if r.Devices[i].Name == "virtio-blk" {
			blk = &r.Devices[i]
		}
	}
	if blk == nil || blk.Total() == 0 || len(blk.Queues) == 0 || accounting.DeviceIRQExits(&r.Total.CPUCounters) == 0 {
		t.Errorf("the JSON report's disk: %+v; device MSI receiver exits %d", blk, accounting.DeviceIRQExits(&r.Total.CPUCounters))
	}
	for _, line := range regexp.MustCompile(`(?m)^(govmm: sandbox: .*|blkbench: .*|  00:0.*)$`).FindAllString(log, -1) {
		t.Log(line)
	}
}
