package hostprobe

import (
	"os"
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	vmxPreemptionTimer := Answers{TSCDeadlineReaches: false, Emulates: false}
	emulating := Answers{TSCDeadlineReaches: true, Emulates: true}
	for _, c := range []struct {
		name         string
		a            Answers
		tsc, db      Setting
		wantTSC, wDB bool
	}{
		{"VMX host, auto", vmxPreemptionTimer, Auto, Auto, false, false},
		{"VMX host, TSC deadline forced on", vmxPreemptionTimer, On, Auto, true, false},
		{"emulating host, auto", emulating, Auto, Auto, true, true},
		{"emulating host, both forced off", emulating, Off, Off, false, false},
		{"VMX host, doorbell forced on", vmxPreemptionTimer, Auto, On, false, true},
	} {
		d := Decide(c.a, c.tsc, c.db)
		if d.TSCDeadline != c.wantTSC || d.Doorbell != c.wDB {
			t.Errorf("%s: %+v, want TSC deadline %v, doorbell %v", c.name, d, c.wantTSC, c.wDB)
		}
	}
}

func TestParseSetting(t *testing.T) {
	for in, want := range map[string]Setting{"auto": Auto, "": Auto, "on": On, "off": Off} {
		if got, err := ParseSetting("--x", in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseSetting("--tsc-deadline", "yes"); err == nil || err.Error() != `--tsc-deadline="yes": want auto, on or off` {
		t.Errorf("bad value: %v", err)
	}
}

// TestProbeThisHost runs the probes on this machine's /dev/kvm. What they
// must find is what every KVM without an in-kernel APIC does (x2APIC and
// filtered MSRs reach user space); whether the host emulates is checked
// against the one thing that cannot be faked from inside: an emulating
// host has no vmx/svm in its CPU flags.
func TestProbeThisHost(t *testing.T) {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		t.Skip("SKIP: no /dev/kvm on this machine")
	}
	a, err := Probe("/dev/kvm", []Claimed{{"APIC_BASE", 0x1B}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", a)
	if !a.X2APICMSRsReach || !a.ClaimedMSRs["APIC_BASE"] {
		t.Errorf("x2APIC MSRs reach govmm %v, APIC_BASE %v: both must with no in-kernel APIC", a.X2APICMSRsReach, a.ClaimedMSRs["APIC_BASE"])
	}
	if a.Emulates == hasHardwareVirt() {
		t.Errorf("emulates = %v, but the CPU flags say hardware virtualization %v", a.Emulates, hasHardwareVirt())
	}
	if a.Emulates && !a.TSCDeadlineReaches {
		t.Errorf("an emulating host has no VMX fast path: the TSC-deadline write must reach govmm (%s)", a.Notes["tsc_deadline"])
	}
	if a.Caps["KVM_CAP_IOEVENTFD"] && !a.IOEventFD {
		t.Errorf("KVM offers KVM_IOEVENTFD but the probe's OUT did not signal it: %s", a.Notes["ioeventfd"])
	}
	// KVM's ioeventfds serve the MMIO bus as well as the PIO bus
	// (kvm_assign_ioeventfd_idx registers on either): an MMIO write the
	// host's exit handler takes in KVM must not reach user space.
	if a.Caps["KVM_CAP_IOEVENTFD"] && !a.IOEventFDMMIO {
		t.Errorf("KVM offers KVM_IOEVENTFD but the probe's MMIO write did not signal it: %s", a.Notes["ioeventfd_mmio"])
	}
	if a.ExitRoundTripNs <= 0 || !a.Caps["KVM_CAP_SYNC_REGS"] {
		t.Errorf("round trip %v ns, caps %v", a.ExitRoundTripNs, a.Caps)
	}
}

func hasHardwareVirt() bool {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "flags") {
			f := " " + line + " "
			return strings.Contains(f, " vmx ") || strings.Contains(f, " svm ")
		}
	}
	return false
}
