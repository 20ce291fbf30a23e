package tests

import (
	"fmt"
	"testing"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/vlapic"
)

// TestIOAPIC runs the IOAPIC guest (edge, level, Remote IRR, EOI by vector,
// polarity, masking, destinations) in xAPIC and x2APIC mode and checks the
// exits of its two measured interrupt cycles exactly.
func TestIOAPIC(t *testing.T) {
	for _, x2 := range []bool{false, true} {
		for _, n := range cpuCounts {
			t.Run(fmt.Sprintf("x2apic=%v/%d", x2, n), func(t *testing.T) {
				cmd := ""
				if x2 {
					cmd = "x2apic=1"
				}
				g := runGuest(t, "ioapic.elf", n, x2, cmd)
				eoi := exitcause.APIC(x2, true, uint16(vlapic.RegEOI))
				for _, c := range []struct {
					sec  int
					want map[exitcause.Cause]uint64
				}{
					{1, map[exitcause.Cause]uint64{ // edge: unmask, line up, EOI, line down, mask
						exitcause.MMIOIOAPICSelWrite: 2, exitcause.MMIOIOAPICWinWrite: 2,
						exitcause.PIOTestDev: 2, eoi: 1}},
					{2, map[exitcause.Cause]uint64{ // level: + two RTE reads around the EOI
						exitcause.MMIOIOAPICSelWrite: 4, exitcause.MMIOIOAPICWinWrite: 2,
						exitcause.MMIOIOAPICWinRead: 2, exitcause.PIOTestDev: 2, eoi: 1}},
				} {
					bsp := g.section(t, c.sec).CPUs[0]
					var total uint64
					for cause, want := range c.want {
						total += want
						if got := exits(bsp, cause); got != want {
							t.Errorf("section %d: %s = %d, want %d", c.sec, cause, got, want)
						}
					}
					if bsp.Exits != total || bsp.Injected != 1 {
						t.Errorf("section %d: %d exits, %d injections; want %d and 1: %v", c.sec, bsp.Exits, bsp.Injected, total, bsp.ByCause)
					}
				}
				if g.Report.Platform.IOAPICFired == 0 {
					t.Error("the IOAPIC fired nothing")
				}
			})
		}
	}
}

// TestInterruptRemapping runs the VT-d guest: Linux's programming sequence,
// IRTEs for IOAPIC pins and MSIs in physical and cluster mode, every fault
// kind, and with 288 vCPUs destinations above APIC ID 255.
func TestInterruptRemapping(t *testing.T) {
	cases := []struct {
		cpus int
		x2   bool
		mode string
	}{
		{1, true, "x2apic"}, {2, true, "x2apic"}, {4, true, "x2apic"}, {64, true, "x2apic"}, {288, true, "x2apic"},
		{4, false, "xapic"}, {64, false, "xapic"}, {4, true, "xapic"},
	}
	for _, c := range cases {
		// The guest provokes each fault reason this many times. With
		// EIME=1 a compatibility-format MSI stays blocked even after
		// GCMD.CFI (VT-d 10.4.4): one more 0x25 than with EIME=0.
		wantFaults := map[string]uint64{"reason_0x20": 1, "reason_0x21": 1, "reason_0x22": 3, "reason_0x24": 1,
			"reason_0x25": 1, "reason_0x26": 3}
		if c.mode == "x2apic" {
			wantFaults["reason_0x25"] = 2
		}
		t.Run(fmt.Sprintf("%s/x2apic=%v/%d", c.mode, c.x2, c.cpus), func(t *testing.T) {
			cmd := "mode=" + c.mode
			if c.x2 && c.mode == "xapic" {
				cmd += " x2apic=1"
			}
			g := runGuest(t, "intremap.elf", c.cpus, c.x2, cmd)
			p := g.Report.Platform
			// Seven remapped interrupts target the BSP alone; more go to APs.
			if p.Remapped < 7 {
				t.Errorf("%d interrupts remapped, want at least 7", p.Remapped)
			}
			var total uint64
			for reason, want := range wantFaults {
				total += want
				if got := p.FaultByReason[reason]; got != want {
					t.Errorf("faults %s = %d, want %d", reason, got, want)
				}
			}
			if p.RemapFaults != total {
				t.Errorf("%d faults in all, want %d: %v", p.RemapFaults, total, p.FaultByReason)
			}
			if exits(g.Report.Total, exitcause.MMIOIOMMUWrite) == 0 {
				t.Error("no remapping-unit register exits counted")
			}
		})
	}
}
