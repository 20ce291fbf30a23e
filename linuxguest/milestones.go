package linuxguest

import (
	"regexp"
	"time"
)

// Milestone is a boot event recognised in the guest kernel's console.
type Milestone struct {
	Name  string
	Match *regexp.Regexp
	// Prompt matches the line being written, not only complete ones: a
	// shell prompt ends without a newline.
	Prompt bool
}

// BootMilestones are the boot phases govmm reports for a Linux guest, in
// the order they happen.
var BootMilestones = []Milestone{
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
