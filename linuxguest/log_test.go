package linuxguest

import (
	"testing"

	"github.com/govmm/govmm/vmm"
)

func TestParseLog(t *testing.T) {
	cases := []struct {
		log  string
		want State
	}{
		{`[    0.1] Linux version 6.1.0-57-cloud-amd64 (x)
[   95.5] DMAR-IR: Enabled IRQ remapping in x2apic mode
[   96.0] x2apic enabled
[   96.0] Switched APIC routing to cluster x2apic.
[   97.9] smp: Brought up 1 node, 2 CPUs
[  400.1] Run /init as init process
`, State{APICMode: "cluster x2apic", X2APIC: true, IRQRemap: "x2apic", CPUsUp: 2, InitRun: true, KernelLine: "Linux version 6.1.0-57-cloud-amd64"}},
		{`[    1.0] APIC: Switch to symmetric I/O mode setup
[    2.0] smp: Brought up 1 node, 4 CPUs
[    3.0] Kernel panic - not syncing: VFS: Unable to mount root fs
`, State{APICMode: "flat", CPUsUp: 4, Panic: "Kernel panic - not syncing: VFS: Unable to mount root fs"}},
		{`Switched APIC routing to mixed x2apic.
govmm: APIC mode mixed: IPIs logical cluster, device interrupts physical
smp: Brought up 1 node, 1 CPU
`, State{APICMode: "mixed", X2APIC: true, CPUsUp: 1}},
		{`Switched APIC routing to physical flat.`, State{APICMode: "physflat"}},
		{`[    0.088827] x2apic: enabled by BIOS, switching to x2apic ops
[    0.561224] Setting APIC routing to physical x2apic.`, State{APICMode: "physical x2apic", X2APIC: true}},
		// Chosen by the MADT, then switched by the probe (a kernel whose
		// mixed driver had no MADT check of its own, 288 vCPUs in cluster
		// mode): the driver in effect is the last one named.
		{`[    0.088827] x2apic: enabled by BIOS, switching to x2apic ops
[    0.561224] Setting APIC routing to mixed x2apic.
[    0.900000] Switched APIC routing to cluster x2apic.`, State{APICMode: "cluster x2apic", X2APIC: true}},
	}
	for i, c := range cases {
		if got := ParseLog(c.log); got != c.want {
			t.Errorf("case %d: got %+v\nwant %+v", i, got, c.want)
		}
	}
	m := Modes["cluster"]
	ok := State{APICMode: "cluster x2apic", X2APIC: true, IRQRemap: "x2apic", CPUsUp: 2, InitRun: true}
	if err := ok.Verify(m, 2, NoPVIPI); err != nil {
		t.Errorf("a good cluster boot fails: %v", err)
	}
	bad := ok
	bad.IRQRemap = ""
	if err := bad.Verify(m, 2, NoPVIPI); err == nil {
		t.Error("cluster mode without remapping passes")
	}
	if err := ok.Verify(m, 4, NoPVIPI); err == nil {
		t.Error("2 of 4 CPUs passes")
	}
	if err := ok.Verify(m, 2, GovmmPVIPI); err == nil {
		t.Error("a boot without the PV line passes with --pv-ipi")
	}
	if err := ok.Verify(Modes["mixed"], 2, NoPVIPI); err == nil {
		t.Error("cluster mode passes as mixed")
	}
	// KVM's PV send-IPI (--lapic=kvm --pv-ipi) is its own line: govmm's
	// does not stand in for it, nor it for govmm's.
	kvmPV := ParseLog("[    0.050000] kvm-guest: setup PV IPIs\n")
	if !kvmPV.KVMPVIPI || kvmPV.PVIPI {
		t.Errorf("KVM's PV IPI line parsed as %+v", kvmPV)
	}
	withKVM, withGovmm := ok, ok
	withKVM.KVMPVIPI, withGovmm.PVIPI = true, true
	if withKVM.Verify(m, 2, KVMPVIPI) != nil || withGovmm.Verify(m, 2, KVMPVIPI) == nil || withKVM.Verify(m, 2, GovmmPVIPI) == nil {
		t.Error("KVM's and govmm's PV send-IPI are not told apart")
	}
	for _, c := range []struct {
		cfg   vmm.Config
		govmm bool
		want  PVIPI
	}{
		{vmm.Config{}, true, NoPVIPI},
		{vmm.Config{PVIPI: true}, true, GovmmPVIPI},
		{vmm.Config{PVIPI: true}, false, NoPVIPI},
		{vmm.Config{PVIPI: true, LAPIC: vmm.LAPICKVM}, false, KVMPVIPI},
	} {
		if got := WantPVIPI(c.cfg, c.govmm); got != c.want {
			t.Errorf("WantPVIPI(%+v, %v) = %d, want %d", c.cfg, c.govmm, got, c.want)
		}
	}
}
