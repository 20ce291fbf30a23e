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
// harmless to the runtime) every 100 µs. A signal that reaches a vCPU
// thread inside KVM_RUN ends it with EINTR (the loop lets Go's preemption
// signal through: kvm.VCPU.RunRaw): no exit of the guest's, so it must be
// counted apart (host_signals), never as an exit, or the guest's check
// fails; and none may be taken for a kick.
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
	var spurious, host uint64
	for _, c := range g.Report.CPUs {
		spurious += c.ByCause["kick_spurious"]
		host += c.HostSignals
	}
	t.Logf("%d SIGURGs sent to the process's threads; %d KVM_RUNs ended by one; %d spurious kick exits", sent, host, spurious)
	if host == 0 {
		t.Fatalf("no signal ended a KVM_RUN: the test proves nothing")
	}
}
