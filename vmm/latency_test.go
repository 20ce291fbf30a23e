package vmm

import (
	"testing"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/vlapic"
)

// TestLatencyStages: each LAPIC stage lands in the accounting stage of the
// same name, and a tag is read back as the IPI kind it was made from.
func TestLatencyStages(t *testing.T) {
	var l accounting.Latencies
	o := ipiLatency{&l}
	for s := range vlapic.NumStages {
		if latencyStages[s].String() != s.String() {
			t.Errorf("LAPIC stage %s counts as %s", s, latencyStages[s])
		}
	}
	m := vlapic.Message{Vector: 0x40, DestMode: vlapic.Logical, Dest: 3}
	tag := o.Tag(m, true)
	o.Observe(vlapic.StageInjected, tag, 5000)
	rs := l.Report()
	if len(rs) != 1 || rs[0].Kind != accounting.IPIX2APICLogical.String() || rs[0].Stage != "injected" || rs[0].Count != 1 {
		t.Errorf("report %+v, want one x2apic_logical injected latency", rs)
	}
}
