package accounting

import "sync/atomic"

// MaxFaultReason bounds the VT-d fault reasons counted one by one.
const MaxFaultReason = 0x40

// Platform counts interrupt events that are not exits of one vCPU: what the
// IOAPIC fired, what went through interrupt remapping, what it refused.
// Any thread may update it; every counter is a plain atomic.
type Platform struct {
	PlatformCounters[atomic.Uint64]
	FaultByReason [MaxFaultReason]atomic.Uint64 // RemapFaults by VT-d fault reason
}

// PlatformCounters are the VM's counters that are not by reason. Like
// CPUCounters, this struct is their one declaration (PlatformCounterTable):
// T is atomic.Uint64 in Platform and uint64 in PlatformReport.
type PlatformCounters[T any] struct {
	IOAPICFired T `json:"ioapic_fired" metric:"govmm_ioapic_fired_total" help:"IOAPIC redirection entries fired." listed:"ioapic_fired"` // compatibility or remappable
	IOAPICLost  T `json:"ioapic_lost" metric:"govmm_ioapic_lost_total" help:"IOAPIC interrupts no LAPIC accepted." listed:"ioapic_lost"`
	MSIs        T `json:"msis" metric:"govmm_msis_total" help:"MSIs from devices." listed:"msis"` // incl. the MSI test device
	Remapped    T `json:"remapped" metric:"govmm_remapped_total" help:"Interrupts translated through an interrupt-remapping table entry." listed:"remapped"`
	// RemapFaults is exported by reason (dashboard/metrics.go), from
	// FaultByReason, which holds the reasons below MaxFaultReason only.
	RemapFaults T `json:"remap_faults" help:"Interrupts the remapping unit blocked." listed:"remap_faults"`
	// Device interrupts (IOAPIC pins and MSIs) as delivered, by how their
	// destination was named: what tells mixed mode from cluster mode.
	DevicePhysical T `json:"device_irqs_physical" metric:"govmm_device_irqs_total" label:"dest_mode=physical" help:"Device interrupts delivered, by destination mode." listed:"delivered_physical_dest"`
	DeviceLogical  T `json:"device_irqs_logical" metric:"govmm_device_irqs_total" label:"dest_mode=logical" help:"Device interrupts delivered, by destination mode." listed:"delivered_logical_dest"`
}

// PlatformReport is the JSON and table form of Platform.
type PlatformReport struct {
	PlatformCounters[uint64]
	FaultByReason map[string]uint64 `json:"remap_faults_by_reason,omitempty"`
}

// Fault counts one blocked interrupt with its VT-d fault reason.
func (p *Platform) Fault(reason uint8) {
	p.RemapFaults.Add(1)
	if int(reason) < MaxFaultReason {
		p.FaultByReason[reason].Add(1)
	}
}

// Report copies the counters.
func (p *Platform) Report() PlatformReport {
	var r PlatformReport
	for _, k := range PlatformCounterTable {
		*r.At(k) = p.At(k).Load()
	}
	for i := range p.FaultByReason {
		if n := p.FaultByReason[i].Load(); n != 0 {
			if r.FaultByReason == nil {
				r.FaultByReason = map[string]uint64{}
			}
			r.FaultByReason[faultName(uint8(i))] = n
		}
	}
	return r
}

func faultName(r uint8) string {
	const hex = "0123456789abcdef"
	return "reason_0x" + string([]byte{hex[r>>4], hex[r&15]})
}
