package vmm

import (
	"bytes"
	"io"
	"regexp"
	"sync"
	"time"

	"github.com/govmm/govmm/accounting"
)

// Milestone is a boot event recognised in the guest kernel's console.
type Milestone struct {
	Name  string
	Match *regexp.Regexp
	// Prompt matches the line being written, not only complete ones: a
	// shell prompt ends without a newline.
	Prompt bool
}

// LinuxMilestones are the boot phases govmm reports for a Linux guest, in
// the order they happen.
var LinuxMilestones = []Milestone{
	{"first console line", regexp.MustCompile(`.`), false},
	{"APIC set up", regexp.MustCompile(`APIC: Switch to symmetric I/O mode setup`), false},
	{"APIC mode chosen", regexp.MustCompile(`Switched APIC routing to|govmm: APIC mode`), false},
	{"all CPUs up", regexp.MustCompile(`smp: Brought up \d+ nodes?, \d+ CPUs?`), false},
	{PhaseInit, regexp.MustCompile(`Run /init as init process`), false},
	{"u-root init", regexp.MustCompile(`Welcome to u-root!`), false},
	{PhaseShell, regexp.MustCompile(`(^|\s)\$ $`), true},
}

// Names of the milestones others look for.
const (
	PhaseInit  = "/init started"
	PhaseShell = "u-root shell" // the shell's first prompt
)

// Phase returns the milestone called name among ph.
func Phase(ph []PhaseRecord, name string) (PhaseRecord, bool) {
	for _, p := range ph {
		if p.Name == name {
			return p, true
		}
	}
	return PhaseRecord{}, false
}

// UserStartup is user space starting up, from /init to the shell's first
// prompt: how long it took and how many SYSCALLs govmm completed through
// its doorbell meanwhile. ok is false unless both milestones were reached.
func UserStartup(ph []PhaseRecord) (d time.Duration, syscalls uint64, ok bool) {
	from, ok1 := Phase(ph, PhaseInit)
	to, ok2 := Phase(ph, PhaseShell)
	if !ok1 || !ok2 || to.At <= from.At {
		return 0, 0, false
	}
	return to.At - from.At, to.Syscalls - from.Syscalls, true
}

// PhaseRecord is one milestone as reached: when, and the VM's exits then.
type PhaseRecord struct {
	Name  string        `json:"name"`
	At    time.Duration `json:"at_ns"`
	Exits uint64        `json:"exits"` // all vCPUs, since boot
	// Syscalls is the guest SYSCALLs govmm completed through its doorbell
	// since boot (0 where SYSCALL works without it).
	Syscalls uint64 `json:"syscalls"`
	Line     string `json:"line"`
}

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

// NewConsole returns a console writer for a VM whose accounting is acct.
func NewConsole(out io.Writer, ms []Milestone) *Console {
	return &Console{Out: out, Milestones: ms, start: time.Now()}
}

// attach starts the clock and gives the console the VM's counters.
func (c *Console) attach(a *accounting.VM) {
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
				syscalls += s.Exits[accounting.CauseSyscallDoorbell]
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
