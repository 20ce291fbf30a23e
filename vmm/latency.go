package vmm

import (
	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/vlapic"
)

// ipiLatency is the LAPICs' latency observer (vlapic.LatencyObserver): it
// counts every IPI's latency into the VM's accounting histograms. A tag
// is the IPI's accounting destination kind: ipiKind for an ICR or
// SELF_IPI write, IPIParavirt for govmm's PV send-IPI (pvipi sets it);
// device MSIs carry accounting.DeviceMSI (platform.sendMSI).
type ipiLatency struct{ l *accounting.Latencies }

func (o ipiLatency) Tag(m vlapic.Message, x2apic bool) uint8 { return uint8(ipiKind(m, x2apic)) }

func (o ipiLatency) Observe(s vlapic.Stage, tag uint8, ns int64) {
	o.l.Observe(latencyStages[s], accounting.IPIKind(tag), ns)
}

// latencyStages maps the LAPIC's stages to the accounting's.
var latencyStages = [vlapic.NumStages]accounting.LatencyStage{
	vlapic.StageAccepted: accounting.LatencyAccepted,
	vlapic.StageInjected: accounting.LatencyInjected,
	vlapic.StageEnded:    accounting.LatencyEnded,
}
