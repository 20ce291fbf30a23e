package accounting

import "sync/atomic"

// MaxFaultReason bounds the VT-d fault reasons counted one by one.
const MaxFaultReason = 0x40

// Platform counts interrupt events that are not exits of one vCPU: what the
// IOAPIC fired, what went through interrupt remapping, what it refused.
// Any thread may update it.
type Platform struct {
	IOAPICFired   atomic.Uint64 // redirection entries fired (compatibility or remappable)
	IOAPICLost    atomic.Uint64 // fired entries no LAPIC accepted
	MSIs          atomic.Uint64 // MSIs from devices (incl. the MSI test device)
	Remapped      atomic.Uint64 // interrupts translated through an IRTE
	RemapFaults   atomic.Uint64 // interrupts the remapping unit blocked
	FaultByReason [MaxFaultReason]atomic.Uint64
	// Device interrupts (IOAPIC pins and MSIs) as delivered, by how their
	// destination was named: what tells mixed mode from cluster mode.
	DevicePhysical atomic.Uint64
	DeviceLogical  atomic.Uint64
}

// PlatformReport is the JSON and table form of Platform.
type PlatformReport struct {
	IOAPICFired    uint64            `json:"ioapic_fired"`
	IOAPICLost     uint64            `json:"ioapic_lost"`
	MSIs           uint64            `json:"msis"`
	Remapped       uint64            `json:"remapped"`
	RemapFaults    uint64            `json:"remap_faults"`
	FaultByReason  map[string]uint64 `json:"remap_faults_by_reason,omitempty"`
	DevicePhysical uint64            `json:"device_irqs_physical"`
	DeviceLogical  uint64            `json:"device_irqs_logical"`
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
	r := PlatformReport{IOAPICFired: p.IOAPICFired.Load(), IOAPICLost: p.IOAPICLost.Load(), MSIs: p.MSIs.Load(),
		Remapped: p.Remapped.Load(), RemapFaults: p.RemapFaults.Load(),
		DevicePhysical: p.DevicePhysical.Load(), DeviceLogical: p.DeviceLogical.Load()}
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
