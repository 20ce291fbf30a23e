// Package dashboard serves govmm's exit accounting live: a JSON API, the
// Prometheus exposition and one self-contained HTML page, for a running VM.
//
// The dashboard only reads. The counters it shows are the accounting's
// atomics (accounting.VCPU, accounting.Platform), copied by Report(); the
// vCPU states are the atomics the kick logic already keeps; the LAPIC
// registers come from vlapic's Snapshot. Nothing here adds a lock, a
// branch or an allocation to the exit path: the cost of watching is paid
// by the reader, once per sampling interval and once per request.
//
// Rates need history, so a sampler goroutine copies the report every
// Options.Interval into a ring of recent samples; /api/v1/state reports
// the rate over the last interval and /api/v1/history the ring.
package dashboard

import (
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/linuxguest"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/vmm"
)

// Source is what the dashboard watches: a running VM, or a fake in tests.
// Every method must be safe to call from any goroutine while the VM runs.
type Source interface {
	Report() accounting.Report
	CPUs() []CPUView
	Phases() []linuxguest.PhaseRecord
	Info() Info
}

// CPUView is one vCPU as the dashboard sees it at one instant.
type CPUView struct {
	CPU   int
	State string // vcpu.State's name: vmm, guest, halted, wait-for-sipi, stopped, parked
	APIC  vlapic.State
}

// Info describes the VM; it does not change while the VM runs.
type Info struct {
	Mode    string    `json:"mode"` // APIC mode as the user asked for it, e.g. "cluster x2apic"
	CPUs    int       `json:"cpus"`
	Kernel  string    `json:"kernel"`
	Started time.Time `json:"started"`
	// Delivery is the interrupt delivery path, "plain" or "avic".
	Delivery string `json:"delivery"`
	// SyscallDoorbell: guest SYSCALLs are completed by govmm (pvsyscall).
	SyscallDoorbell bool `json:"syscall_doorbell"`
	// BusMap is the VM's exit bus: every PIO, MMIO and MSR range govmm
	// serves and what serves it (govmm map prints the same).
	BusMap []exitbus.Entry `json:"bus_map"`
}

// VMSource adapts a running VM. con is the console the VM was built with
// (its boot milestones become the phases); nil for guests without one.
// info.CPUs defaults to the VM's vCPU count and info.Started to now.
func VMSource(vm *vmm.VM, con *linuxguest.Console, info Info) Source {
	if info.CPUs == 0 {
		info.CPUs = len(vm.VCPUs())
	}
	if info.Started.IsZero() {
		info.Started = time.Now()
	}
	if info.Delivery == "" {
		info.Delivery = vm.Accounting().Delivery
	}
	info.SyscallDoorbell = info.SyscallDoorbell || vm.SyscallDoorbell()
	if info.BusMap == nil {
		info.BusMap = vm.Map()
	}
	return vmSource{vm: vm, con: con, info: info}
}

type vmSource struct {
	vm   *vmm.VM
	con  *linuxguest.Console
	info Info
}

func (s vmSource) Report() accounting.Report { return s.vm.Accounting().Report() }

func (s vmSource) CPUs() []CPUView {
	cpus := s.vm.VCPUs()
	out := make([]CPUView, len(cpus))
	for i, c := range cpus {
		// State is an atomic load; Snapshot takes the LAPIC's own lock for
		// a consistent copy, as the vCPU's exit handler does: a reader
		// once a second, never a new lock on the exit path.
		// Under --lapic=kvm the LAPIC is KVM's, readable only on the vCPU's
		// thread: the view has none.
		out[i] = CPUView{CPU: i, State: c.State().String()}
		if b := s.vm.APICs(); b != nil {
			out[i].APIC = b.LAPIC(i).Snapshot()
		}
	}
	return out
}

func (s vmSource) Phases() []linuxguest.PhaseRecord {
	if s.con == nil {
		return nil
	}
	return s.con.Reached()
}

func (s vmSource) Info() Info { return s.info }
