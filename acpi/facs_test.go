package acpi

import "testing"

func TestFACS(t *testing.T) {
	im := build(t, testConfig(4))
	if a := im.addrs["FACS"]; a%facsAlign != 0 {
		t.Errorf("FACS at %#x, not 64-byte aligned", a)
	}
	fs := fields(iasl(t, "FACS", im.tables["FACS"]))
	if got := value(t, fs, "Length"); got != "00000040" {
		t.Errorf("FACS length %s, want 00000040", got)
	}
	if got := value(t, fs, "Version"); got != "02" {
		t.Errorf("FACS version %s, want 02", got)
	}
}
