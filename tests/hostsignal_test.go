package tests

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/vmm"
)

// TestHostSignalsCostNoExit runs ipi.elf, whose sections check that govmm
// attributes to the sending BSP exactly the APIC accesses it made, while
// every thread of this process is sent SIGURG (Go's own preemption signal,
// harmless to the runtime) every 100 µs, once with each way of entering
// the guest (vmm.Config.KVMRun):
//   - syscall: govmm blocks every signal but its kick and the faults on
//     each vCPU thread (vcpu/sigmask.go), so no SIGURG ends KVM_RUN;
//   - raw: SIGURG is let through (a stop-the-world must be able to end a
//     KVM_RUN the runtime does not know of) and ends KVM_RUN with EINTR,
//     no exit of the guest's: it must be counted apart (host_signals),
//     never as an exit, or the guest's check fails.
func TestHostSignalsCostNoExit(t *testing.T) {
	for _, run := range []vmm.KVMRun{vmm.KVMRunSyscall, vmm.KVMRunRaw} {
		t.Run(run.String(), func(t *testing.T) { testHostSignals(t, run) })
	}
}

func testHostSignals(t *testing.T, run vmm.KVMRun) {
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
	g := runGuestWith(t, "ipi.elf", 4, true, "mode=x2apic-phys rounds=4", func(c *vmm.Config) { c.KVMRun = run })
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
	t.Logf("%d SIGURGs sent to the process's threads; %d KVM_RUNs ended by one with nothing for the guest; %d spurious kick exits", sent, host, spurious)
	switch {
	case run == vmm.KVMRunSyscall && host != 0:
		t.Errorf("%d KVM_RUNs ended by a host signal, with every host signal blocked on the vCPU threads", host)
	case run == vmm.KVMRunRaw && host == 0:
		t.Errorf("no SIGURG ended a raw KVM_RUN: the test proves nothing (is SIGURG blocked on the vCPU threads?)")
	}
}
