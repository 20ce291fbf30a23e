package tests

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestHostSignalsCostNoExit runs ipi.elf, whose sections check that govmm
// attributes to the sending BSP exactly the APIC accesses it made, while
// every thread of this process is sent SIGURG (Go's own preemption signal,
// harmless to the runtime) every 100 µs. A signal that reached a vCPU
// thread inside KVM_RUN would end it with EINTR: an exit the guest did not
// make, which the guest's check reports. govmm blocks every signal but its
// kick and the faults on each vCPU thread (vcpu/sigmask.go), so the counts
// stay exact.
func TestHostSignalsCostNoExit(t *testing.T) {
	needKVM(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent int
	wg.Add(1)
	go func() {
		defer wg.Done()
		pid := os.Getpid()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
			ents, err := os.ReadDir("/proc/self/task")
			if err != nil {
				continue
			}
			for _, e := range ents {
				if tid, err := strconv.Atoi(e.Name()); err == nil && unix.Tgkill(pid, tid, unix.SIGURG) == nil {
					sent++
				}
			}
		}
	}()
	g := runGuest(t, "ipi.elf", 4, true, "mode=x2apic-phys rounds=4")
	close(stop)
	wg.Wait()
	if sent < 100 {
		t.Fatalf("only %d signals sent during the run: the test proves nothing", sent)
	}
	var spurious uint64
	for _, c := range g.Report.CPUs {
		spurious += c.ByCause["kick_spurious"]
	}
	t.Logf("%d SIGURGs sent to the process's threads; %d spurious kick exits", sent, spurious)
}
