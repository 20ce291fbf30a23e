package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/vcpu"
	"github.com/govmm/govmm/vmm"
)

// TestFuzzSnapshot snapshots fuzz.elf at random moments of its run (its
// four CPUs writing at random everything govmm serves: the LAPICs, the
// IOAPIC, the remapping unit, the PV units, the virtio console and
// disk's PCI functions and transports) and restores each snapshot in
// a new VM: a seed that passes uninterrupted still passes from every
// snapshot, its own invariants kept (the vectors it expects taken, none
// twice), or ends there as TestGuestFuzz lets a seed end (the CPUs race
// on from the snapshot as they did not before: another path), on govmm's
// LAPIC with the PV send-IPI and PV EOI on. The moments are drawn from a
// logged seed.
func TestFuzzSnapshot(t *testing.T) {
	needKVM(t)
	path := filepath.Join(guestDir(t), "fuzz.elf")
	img, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(t.TempDir(), "scratch.img")
	if err := os.WriteFile(disk, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	pick := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(pick, 0))
	t.Logf("moments drawn from rand seed %d", pick)
	const secs = 6
	compared := 0
	for seed := 1; seed <= 3; seed++ {
		cmdline := fmt.Sprintf("seed=%d secs=%d", seed, secs)
		var con vmm.ConsoleLog
		vm, err := vmm.New(vmm.Config{CPUs: 4, Kernel: img, KernelPath: path, Cmdline: cmdline, Console: &con,
			IOMMU: true, PVIPI: true, PVEOI: true, VirtioConsole: true, Disk: vmm.Disk{Path: disk}, Watchdog: 20 * time.Second})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		done := make(chan vmm.Result, 1)
		go func() { done <- vm.Run(secs*time.Second + 90*time.Second) }()
		var dirs []string
		var ended *vmm.Result
		for k := range 2 {
			select {
			case res := <-done:
				ended = &res
			case <-time.After(time.Duration(200+rng.IntN(secs*1000/2)) * time.Millisecond):
			}
			if ended != nil {
				break
			}
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("seed%d-%d", seed, k))
			if _, err := vm.Snapshot(dir, "test"); err != nil {
				vm.Stop("test")
				<-done
				vm.Close()
				t.Fatalf("seed %d: snapshot %d: %v\n%s", seed, k, err, tail(con.String(), 3000))
			}
			dirs = append(dirs, dir)
		}
		res := vmm.Result{}
		if ended != nil {
			res = *ended
		} else {
			res = <-done
		}
		vm.Close()
		out := con.String()
		if res.Err != nil || res.Status != 1 || !strings.Contains(out, "PASS fuzz") {
			t.Logf("seed %d: did not pass uninterrupted (status %d, %v): its snapshots are not compared", seed, res.Status, res.Err)
			continue
		}
		for k, dir := range dirs {
			var con2 vmm.ConsoleLog
			vm2, err := vmm.Restore(dir, vmm.RestoreOptions{Console: &con2})
			if err != nil {
				t.Fatalf("seed %d: restore %d: %v", seed, k, err)
			}
			res2 := vm2.Run(secs*time.Second + 90*time.Second)
			vm2.Close()
			out2 := con2.String()
			switch {
			case res2.Err == nil && res2.Status == 1 && strings.Contains(out2, "PASS fuzz"):
				compared++
			case errors.Is(res2.Err, vcpu.ErrShutdown) || errors.Is(res2.Err, vmm.ErrParked):
				// Four CPUs race from the snapshot on as they did not
				// before it: the run may take another path, to an end
				// TestGuestFuzz accepts too (a device's INIT to the BSP).
				compared++
				t.Logf("seed %d: from snapshot %d: an architectural end: %v", seed, k, res2.Err)
			default:
				t.Errorf("seed %d: from snapshot %d: status %d, %v (uninterrupted: PASS)\n%s", seed, k, res2.Status, res2.Err, tail(out2, 3000))
			}
		}
	}
	if compared == 0 {
		t.Fatalf("no seed passed with a snapshot taken to compare")
	}
	t.Logf("%d restored runs passed as their seeds did", compared)
}
