package vcpu

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govmm/govmm/kvm"
)

// lockedBuffer takes writes from any goroutine, as a dump's writer must.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor waits until w holds want, or fails after 10 s.
func waitFor(t *testing.T, w *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the dump:\n%s", want, w.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// A halted vCPU serves a dump request on its own thread (its event log
// and registers are that thread's: read from the requester's, the race
// detector caught it), with the RIP of its HLT exit, and sleeps on: the
// request is no wake-up of the guest's. Once the loop has ended the
// requester prints it.
func TestDumpOfAHaltedVCPU(t *testing.T) {
	r := newRig(t, 1)
	f := newFake(open(kvm.ExitHLT), outb(0x80, 0))
	r.fakes[0] = f
	wait := r.start()
	r.waitState(0, StateHalted)
	var w lockedBuffer
	r.cpus[0].RequestDump(&w)
	waitFor(t, &w, "vCPU 0: halted RIP 0x1000")
	waitFor(t, &w, "last events exit 5@0x1000")
	if s := r.cpus[0].State(); s != StateHalted {
		t.Errorf("state %v after the dump, want it still halted", s)
	}
	if n := strings.Count(w.String(), "last events"); n != 1 {
		t.Errorf("%d dumps for one request:\n%s", n, w.String())
	}
	r.deliver(0, 0x45)
	wait()
	wantEntries(t, f, e(false, -1), e(false, 0x45), e(false, -1))

	var after lockedBuffer
	r.cpus[0].RequestDump(&after)
	waitFor(t, &after, "vCPU 0: stopped (no exit)")
}
