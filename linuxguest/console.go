package linuxguest

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
)

// Console watches the guest console line by line: it keeps the whole log
// (to verify modes from the kernel's own words), records milestones with
// the exit count at that moment, and passes the bytes on to Out.
type Console struct {
	Out        io.Writer
	Milestones []Milestone
	acct       *accounting.VM
	start      time.Time

	mu      sync.Mutex
	line    []byte
	log     bytes.Buffer
	seen    []bool
	reached []PhaseRecord
}

// NewConsole returns a console writer that passes the guest's output on to
// out (nil: nowhere) and watches it for ms. Given to a VM as its
// Config.Console, it gets the VM's accounting (vmm.AccountingWatcher).
func NewConsole(out io.Writer, ms []Milestone) *Console {
	return &Console{Out: out, Milestones: ms, start: time.Now()}
}

// WatchAccounting starts the clock and gives the console the VM's
// counters; vmm.New calls it once the VM's accounting exists.
func (c *Console) WatchAccounting(a *accounting.VM) {
	c.mu.Lock()
	c.acct, c.start = a, time.Now()
	c.mu.Unlock()
}

func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.log.Write(p)
	for _, b := range p {
		if b != '\n' {
			c.line = append(c.line, b)
			continue
		}
		c.lineDone()
	}
	if len(c.line) > 0 {
		c.check(string(c.line), true)
	}
	c.mu.Unlock()
	if c.Out != nil {
		return c.Out.Write(p)
	}
	return len(p), nil
}

// lineDone checks a complete line against the milestones not yet reached
// (a kernel may skip one, e.g. print no APIC routing line in flat mode).
func (c *Console) lineDone() {
	line := string(bytes.TrimRight(c.line, "\r"))
	c.line = c.line[:0]
	c.check(line, false)
}

// check records the milestones line reaches; a partial line is checked only
// against prompt milestones.
func (c *Console) check(line string, partial bool) {
	if c.seen == nil {
		c.seen = make([]bool, len(c.Milestones))
	}
	for i, m := range c.Milestones {
		if c.seen[i] || (partial && !m.Prompt) || !m.Match.MatchString(line) {
			continue
		}
		c.seen[i] = true
		var exits, syscalls uint64
		if c.acct != nil {
			for _, s := range c.acct.Snapshot() {
				exits += s.Total()
				syscalls += s.Exits[exitcause.SyscallDoorbell]
			}
		}
		c.reached = append(c.reached, PhaseRecord{Name: m.Name, At: time.Since(c.start), Exits: exits, Syscalls: syscalls, Line: line})
	}
}

// Reached returns the milestones reached so far.
func (c *Console) Reached() []PhaseRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]PhaseRecord(nil), c.reached...)
}

// Log returns everything the guest printed.
func (c *Console) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.String()
}
