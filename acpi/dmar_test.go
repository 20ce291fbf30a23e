package acpi

import (
	"fmt"
	"testing"
)

func TestDMAR(t *testing.T) {
	im := build(t, testConfig(4))
	fs := fields(iasl(t, "DMAR", im.tables["DMAR"]))
	for _, c := range []struct{ name, want string }{
		{"Host Address Width", "26"}, // 39 bits, stored as 38
		{"Flags", "01"},              // INTR_REMAP, X2APIC_OPT_OUT clear
	} {
		if got := value(t, fs, c.name); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	st := subtables(fs)
	if len(st) != 1 || st[0][0].value != "0000 [Hardware Unit Definition]" {
		t.Fatalf("DMAR subtables: %v, want one DRHD", st)
	}
	drhd := st[0]
	for _, c := range []struct{ name, want string }{
		{"Length", "0018"},
		{"Flags", "01"}, // INCLUDE_PCI_ALL
		{"PCI Segment Number", "0000"},
		{"Register Base Address", "00000000FED90000"},
		{"Device Scope Type", "03 [IOAPIC Device]"},
		{"Entry Length", "08"},
		{"Enumeration ID", "00"},
		{"PCI Bus Number", "00"},
		{"PCI Path", "1E,00"}, // SourceID 0x00F0 = 00:1e.0
	} {
		if got := get(drhd, c.name); got != c.want {
			t.Errorf("DRHD %s = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestDMARScopes checks one scope per IOAPIC, the opt-out flag and the
// requester-ID split.
func TestDMARScopes(t *testing.T) {
	cfg := testConfig(4)
	cfg.IOAPICs = []IOAPIC{
		{ID: 1, Addr: 0xFEC00000, GSIBase: 0, SourceID: 0x00F0},
		{ID: 2, Addr: 0xFEC01000, GSIBase: 24, SourceID: 0x1A2B}, // 1a:05.3
	}
	cfg.DMAR.X2APICOptOut = true
	cfg.DMAR.HostAddrWidth = 48
	im := build(t, cfg)
	fs := fields(iasl(t, "DMAR", im.tables["DMAR"]))
	if got := value(t, fs, "Flags"); got != "03" {
		t.Errorf("DMAR flags %s, want 03 (INTR_REMAP | X2APIC_OPT_OUT)", got)
	}
	if got := value(t, fs, "Host Address Width"); got != "2F" {
		t.Errorf("host address width %s, want 2F", got)
	}
	var ids, buses, paths []string
	for _, f := range fs {
		switch f.name {
		case "Enumeration ID":
			ids = append(ids, f.value)
		case "PCI Bus Number":
			buses = append(buses, f.value)
		case "PCI Path":
			paths = append(paths, f.value)
		}
	}
	if got := fmt.Sprint(ids, buses, paths); got != "[01 02] [00 1A] [1E,00 05,03]" {
		t.Errorf("IOAPIC scopes (IDs, buses, paths) = %s", got)
	}
	if got := get(subtables(fs)[0], "Length"); got != "0020" {
		t.Errorf("DRHD length %s, want 0020", got)
	}
}

func TestNoDMAR(t *testing.T) {
	cfg := testConfig(4)
	cfg.DMAR = nil
	im := build(t, cfg)
	if _, ok := im.tables["DMAR"]; ok {
		t.Error("DMAR present with Config.DMAR nil")
	}
}
