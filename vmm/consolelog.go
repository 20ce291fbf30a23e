package vmm

import (
	"bytes"
	"sync"
)

// ConsoleLog is a console (Config.Console) that keeps everything the guest
// prints, for guests whose output is read rather than shown (the
// bare-metal test guests, bench-ipi). vCPU threads write it, and a VM
// stopped by a timeout may return from Run before they are done: String
// may be called while they write.
type ConsoleLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *ConsoleLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what the guest printed so far.
func (l *ConsoleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
