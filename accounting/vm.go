package accounting

import (
	"fmt"
	"sync"

	"github.com/govmm/govmm/exitcause"
)

// VM is the accounting of a whole VM: one VCPU per vCPU plus the measured
// sections the guest marks through govmm's window port.
type VM struct {
	CPUs     []VCPU
	Platform Platform
	// Delivery names the VM's interrupt delivery path for the report
	// ("plain" or "avic"); set once before the vCPUs run.
	Delivery string
	// HaltPoll says how halted vCPUs poll before they sleep (e.g. "up to
	// 200µs" or "off: 4 vCPUs, 2 host CPUs"); set once before they run.
	HaltPoll string
	// Latency is the IPI latency histograms (counted by Observer, the
	// LAPICs' vlapic.Observer).
	Latency Latencies
	// Devices are the PCI devices' interrupt counters, one per device
	// with MSI-X; set before the vCPUs run, read-only from then on (the
	// counters inside are atomics).
	Devices []*DeviceIRQs
	// LAPIC names whose local APIC the VM has ("govmm" or "kvm") for the
	// report; set once before the vCPUs run.
	LAPIC string
	// KVM samples KVM's per-vCPU statistics at each section's ends when
	// the LAPIC is KVM's (--lapic=kvm), whose exits govmm never sees; set
	// before the vCPUs run, nil otherwise. A section's exits are then
	// KVM's (Section.KVM, LastSection).
	KVM KVMSampler

	mu       sync.Mutex // guards the section state below; taken only on marker exits
	open     int
	openAt   []Snapshot
	kvmAt    []KVMCounts
	sections []Section
}

// Section is the exits of one measured section, per vCPU.
type Section struct {
	ID   int        `json:"id"`
	CPUs []Snapshot `json:"-"`
	// KVM is KVM's statistics over the section, per vCPU, when the VM
	// samples them (VM.KVM), with the marker's own exits taken out of
	// KVMExits as they are out of CPUs; nil otherwise, or when KVM could
	// not be read (KVMErr says why).
	KVM    []KVMCounts `json:"-"`
	KVMErr string      `json:"-"`
}

// NewVM returns zeroed accounting for n vCPUs.
func NewVM(n int) *VM { return &VM{CPUs: make([]VCPU, n)} }

// Snapshot copies every vCPU's counters.
func (a *VM) Snapshot() []Snapshot {
	out := make([]Snapshot, len(a.CPUs))
	for i := range a.CPUs {
		out[i] = a.CPUs[i].Snapshot()
	}
	return out
}

// stableSnapshot copies every vCPU's counters, each outside its exits'
// windows (VCPU.StableSnapshot): a section's ends.
func (a *VM) stableSnapshot() []Snapshot {
	out := make([]Snapshot, len(a.CPUs))
	for i := range a.CPUs {
		out[i] = a.CPUs[i].StableSnapshot()
	}
	return out
}

// Mark handles a write to the window port: id > 0 opens section id (closing
// any open one), 0 closes the open one. The marker's own exits (the one
// that calls Mark, already counted on cpu, and the guest's reads of the
// marker's ports, such as its question whether a receiver is halted) are
// the instrument's, not the measured code's: a section leaves them out.
func (a *VM) Mark(cpu int, id int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	snap := a.stableSnapshot()
	var kvmSnap []KVMCounts
	var kvmErr error
	if a.KVM != nil {
		kvmSnap, kvmErr = a.KVM()
	}
	if a.open != 0 {
		sec := Section{ID: a.open, CPUs: make([]Snapshot, len(snap))}
		if a.KVM != nil {
			sec.KVM = make([]KVMCounts, len(snap))
			switch {
			case kvmErr != nil:
				sec.KVM, sec.KVMErr = nil, fmt.Sprintf("KVM's statistics could not be read at the section's end: %v", kvmErr)
			case len(a.kvmAt) != len(snap) || len(kvmSnap) != len(snap):
				sec.KVM, sec.KVMErr = nil, "KVM's statistics could not be read at the section's start"
			}
		}
		for i := range snap {
			sec.CPUs[i] = snap[i].Sub(a.openAt[i])
			if sec.KVM != nil {
				sec.KVM[i] = kvmSnap[i].Sub(a.kvmAt[i])
				mark := sec.CPUs[i].Exits[exitcause.PIOMark] // port I/O exits, each one
				sec.KVM[i][KVMExits] -= min(sec.KVM[i][KVMExits], mark)
				sec.KVM[i][KVMIOExits] -= min(sec.KVM[i][KVMIOExits], mark)
			}
			sec.CPUs[i].Exits[exitcause.PIOMark] = 0
		}
		a.sections = append(a.sections, sec)
		a.open = 0
	}
	if id != 0 {
		a.open, a.openAt, a.kvmAt = id, snap, kvmSnap
	}
}

// InjectedVector is how often vector has been injected into cpu so far
// (withdrawn injections not counted); 0 for a cpu out of range.
func (a *VM) InjectedVector(cpu int, vector uint8) uint64 {
	if cpu < 0 || cpu >= len(a.CPUs) {
		return 0
	}
	return a.CPUs[cpu].InjectedVec[vector].Load()
}

// Sections returns the closed sections in the order they closed.
func (a *VM) Sections() []Section {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Section(nil), a.sections...)
}

// SectionCounts are the sums of a measured section the guest reads back
// through govmm's window port (devices.Marker).
type SectionCounts struct {
	All, Own       uint64 // exits of all vCPUs; of the reading vCPU
	IPIsDelivered  uint64 // IPI destinations reached, all kinds
	IPIsSent       uint64 // ICR writes and PV sends that sent an IPI
	DeviceIRQExits uint64 // exits device MSIs caused their receivers, all vCPUs
}

// LastSection sums the last closed section as vCPU cpu reads it (zeros
// before any).
func (a *VM) LastSection(cpu int) SectionCounts {
	a.mu.Lock()
	defer a.mu.Unlock()
	var c SectionCounts
	if len(a.sections) == 0 {
		return c
	}
	sec := a.sections[len(a.sections)-1]
	for i, s := range sec.CPUs {
		n := s.Total()
		if sec.KVM != nil {
			n = sec.KVM[i].GuestExits() // KVM's LAPIC: KVM saw every exit, govmm only some
		}
		c.All += n
		if i == cpu {
			c.Own += n
		}
		for k := range s.IPIDelivered {
			c.IPIsDelivered += s.IPIDelivered[k]
			c.IPIsSent += s.IPISent[k]
		}
		c.DeviceIRQExits += DeviceIRQExits(&s.CPUCounters)
	}
	return c
}
