package tests

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vmm"
)

// shellVM is a Linux guest at its u-root shell on its console (the virtio
// console, hvc0), driven by typing into it.
type shellVM struct {
	vm   *vmm.VM
	con  interface{ Log() string }
	in   *io.PipeWriter
	done chan vmm.Result
	off  int // console log read up to here by type
}

// bootShell boots govmm's kernel in mode on 2 vCPUs with 512 MiB and PV
// EOI (and edit's changes) to its shell prompt.
func bootShell(t *testing.T, mode string, edit func(*vmm.Config)) *shellVM {
	t.Helper()
	needKVM(t)
	img, err := os.ReadFile(filepath.Join(cacheDir(), "linux", "vmlinux"))
	if err != nil {
		t.Fatalf("kernel not built (make kernel): %v", err)
	}
	rd, err := os.ReadFile(filepath.Join(cacheDir(), "initramfs.cpio"))
	if err != nil {
		t.Fatalf("initramfs not built (make initramfs): %v", err)
	}
	cfg, _, err := linuxguest.VMConfig(mode, 2, true, false, "")
	if err != nil {
		t.Fatal(err)
	}
	con := linuxguest.NewConsole(nil, linuxguest.BootMilestones)
	pr, pw := io.Pipe()
	cfg.Kernel, cfg.Initrd, cfg.Console, cfg.ConsoleInput, cfg.MemSize, cfg.PVEOI = img, rd, con, pr, 512<<20, true
	if edit != nil {
		edit(&cfg)
	}
	vm, err := vmm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := startShell(t, vm, con, pw)
	deadline := time.Now().Add(linuxBootLimit(t))
	for {
		if _, ok := linuxguest.Phase(con.Reached(), linuxguest.PhaseShell); ok {
			break
		}
		s.checkRunning(t, deadline, "the shell's prompt")
	}
	s.off = len(con.Log())
	return s
}

// startShell runs vm, whose console is con and input in, in the
// background; the test's end stops it and waits for it before Close.
func startShell(t *testing.T, vm *vmm.VM, con interface{ Log() string }, in *io.PipeWriter) *shellVM {
	s := &shellVM{vm: vm, con: con, in: in, done: make(chan vmm.Result, 1)}
	ran := make(chan struct{})
	t.Cleanup(func() {
		vm.Stop("test ended")
		<-ran
		in.Close()
		vm.Close()
	})
	go func() {
		defer close(ran)
		s.done <- vm.Run(linuxBootLimit(t))
	}()
	return s
}

// checkRunning waits a little, failing the test if the guest ended or the
// deadline passed while waiting for what.
func (s *shellVM) checkRunning(t *testing.T, deadline time.Time, what string) {
	t.Helper()
	select {
	case res := <-s.done:
		s.done <- res
		t.Fatalf("the guest ended (%s: %v) waiting for %s\n%s%s", res.How, res.Err, what, consoleExcerpt(s.con.Log()), endState(s.vm))
	case <-time.After(50 * time.Millisecond):
	}
	if time.Now().After(deadline) {
		t.Fatalf("no %s in %v\n%s%s", what, time.Until(deadline), consoleExcerpt(s.con.Log()), endState(s.vm))
	}
}

// typeLine types cmd at the shell and waits for want (a regexp) in what
// the console shows after it; it returns that output.
func (s *shellVM) typeLine(t *testing.T, cmd, want string) string {
	t.Helper()
	re := regexp.MustCompile(want)
	if _, err := io.WriteString(s.in, cmd+"\n"); err != nil {
		t.Fatalf("typing %q: %v", cmd, err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out := s.con.Log()[s.off:]
		if loc := re.FindStringIndex(out); loc != nil {
			s.off += loc[1]
			return out[:loc[1]]
		}
		s.checkRunning(t, deadline, fmt.Sprintf("%q after %q", want, cmd))
	}
}

// poweroff ends the guest from its shell and checks that it ended so.
func (s *shellVM) poweroff(t *testing.T) {
	t.Helper()
	io.WriteString(s.in, "poweroff\n")
	select {
	case res := <-s.done:
		if res.How != "poweroff" {
			t.Errorf("the guest ended by %s (%v), want poweroff\n%s", res.How, res.Err, consoleExcerpt(s.con.Log()))
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("no poweroff\n%s", consoleExcerpt(s.con.Log()))
	}
}

// snapshotShell saves the guest into a new directory and stops it.
func (s *shellVM) snapshotShell(t *testing.T, name string) (string, vmm.SnapshotInfo) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	info, err := s.vm.Snapshot(dir, "test")
	if err != nil {
		t.Fatalf("snapshot %s: %v\n%s", name, err, consoleExcerpt(s.con.Log()))
	}
	s.vm.Stop("snapshot taken")
	<-s.done
	s.done <- vmm.Result{How: "stopped after its snapshot"}
	return dir, info
}

// restoreShell restores dir (on lapic, when set) and runs it.
func restoreShell(t *testing.T, dir string, lapic *vmm.LAPICKind) (*shellVM, time.Duration) {
	t.Helper()
	con := linuxguest.NewConsole(nil, nil)
	pr, pw := io.Pipe()
	start := time.Now()
	vm, err := vmm.Restore(dir, vmm.RestoreOptions{Console: con, ConsoleInput: pr, LAPIC: lapic})
	if err != nil {
		t.Fatalf("restore of %s: %v", filepath.Base(dir), err)
	}
	took := time.Since(start)
	return startShell(t, vm, con, pw), took
}

// reUptime is /proc/uptime's first field, on a line of its own or after
// the shell's prompt (the console interleaves them).
var reUptime = regexp.MustCompile(`(?m)(?:^|\$ )(\d+\.\d+) \d+\.\d+\s*$`)

func uptime(t *testing.T, out string) float64 {
	t.Helper()
	m := reUptime.FindAllStringSubmatch(out, -1)
	if m == nil {
		t.Fatalf("no /proc/uptime in %q", out)
	}
	v, _ := strconv.ParseFloat(m[len(m)-1][1], 64)
	return v
}

// TestLinuxSnapshot snapshots a Linux guest (govmm's kernel, 512 MiB, 2
// vCPUs, PV EOI on, its console and a disk on virtio) at its shell after
// it wrote a file to its tmpfs and one to the disk, and restores it in a
// new VM: the shell answers (the virtio console's queues where they
// were), both files read back, the guest's clock goes on from where it
// was (its uptime, which stood still while it was saved, moves on), and a
// file written to the disk after the restore is on the image (virtio-blk's
// queues where they were). The snapshot's size and the times to save and
// restore it are logged (the closing figures of issue 40).
func TestLinuxSnapshot(t *testing.T) {
	disk := makeDisk(t, map[string]string{"host.txt": "from the host\n"}, 16, 16)
	s := bootShell(t, "cluster", func(c *vmm.Config) { c.Disk = vmm.Disk{Path: disk.path} })
	s.typeLine(t, "mkdir /mnt; mount -t ext2 /dev/vda /mnt; cat /mnt/host.txt", `from the host`)
	out := s.typeLine(t, "echo snap-$((6*7)) > /tmp/f; echo disk-$((6*7)) > /mnt/before.txt; sync; cat /proc/uptime; echo mark-$((1+1))", `mark-2`)
	up1 := uptime(t, out)
	dir, info := s.snapshotShell(t, "shell")
	r, took := restoreShell(t, dir, nil)
	t.Logf("512 MiB Linux at its shell: snapshot of %.1f MiB (%d KiB on disk) in %v (the guest paused), restore built in %v",
		float64(info.Bytes)/(1<<20), diskKiB(t, dir), info.Took.Round(time.Millisecond), took.Round(time.Millisecond))
	time.Sleep(time.Second) // the clock must move on
	out = r.typeLine(t, "cat /tmp/f /mnt/before.txt; cat /proc/uptime; echo mark-$((2+3))", `mark-5`)
	if !strings.Contains(out, "snap-42") || !strings.Contains(out, "disk-42") {
		t.Errorf("the files written before the snapshot do not read back after it:\n%s", out)
	}
	if up2 := uptime(t, out); up2 <= up1 || up2 > up1+120 {
		t.Errorf("uptime %.2f s before the snapshot, %.2f s after the restore: want it to move on from where it was", up1, up2)
	}
	r.typeLine(t, "echo after-$((7*6)) > /mnt/after.txt; umount /mnt; echo mark-$((3+4))", `mark-7`)
	r.poweroff(t)
	for name, want := range map[string]string{"before.txt": "disk-42\n", "after.txt": "after-42\n"} {
		if got, ok := readDiskFile(t, disk, name); got != want {
			t.Errorf("the image's %s reads %q (found %v), want %q", name, got, ok, want)
		}
	}
}

// TestLinuxHandover hands a Linux guest from govmm's LAPIC to KVM's and
// back ten times while ipibench's IPI storm runs in it: each leg is a
// snapshot, taken mid-storm, restored on the other LAPIC and let run for a
// while; at the end the storm's own check (every call ran, each CPU took
// what was sent) passes and the shell answers.
func TestLinuxHandover(t *testing.T) {
	if hostprobe.DetectEmulator() == hostprobe.QEMUTCG {
		t.Skip("SKIP: KVM's LAPIC in the nested AMD-V host delivers an interrupt twice now and then, which crashes Linux (docs/hosts.md): the nested VT-x host runs it")
	}
	s := bootShell(t, "physical", nil)
	s.typeLine(t, "ipibench -storm -n 50000 & echo started-$((3*3))", `started-9`)
	lapic := []vmm.LAPICKind{vmm.LAPICGovmm, vmm.LAPICKVM}
	for leg := 1; leg <= 10; leg++ {
		time.Sleep(300 * time.Millisecond)
		dir, _ := s.snapshotShell(t, fmt.Sprintf("leg%d", leg))
		s, _ = restoreShell(t, dir, &lapic[leg%2])
	}
	// The storm's own check: every call each CPU sent ran once. (Its
	// comparison with govmm's injections does not hold across restores:
	// a restored VM counts from its restore.)
	out := s.typeLine(t, "wait; echo done-$((4*4))", `done-16`)
	if !strings.Contains(out, "calls sent") {
		t.Errorf("ipibench's storm ended before the last handover, or printed nothing:\n%s", out)
	} else if !strings.Contains(out, "every call ran exactly once") {
		t.Errorf("ipibench's storm across ten handovers:\n%s", out)
	}
	s.poweroff(t)
}

// diskKiB is what dir's files take on disk.
func diskKiB(t *testing.T, dir string) int64 {
	var n int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512 / 1024
			}
		}
	}
	return n
}
