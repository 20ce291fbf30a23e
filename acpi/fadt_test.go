package acpi

import (
	"fmt"
	"testing"
)

func TestFADT(t *testing.T) {
	im := build(t, testConfig(4))
	f := im.tables["FACP"]
	if len(f) != fadtLen || f[8] != 6 {
		t.Fatalf("FADT: %d bytes revision %d, want %d bytes revision 6", len(f), f[8], fadtLen)
	}
	dsl := iasl(t, "FACP", f)
	fs := fields(dsl)
	dsdt := fmt.Sprintf("%08X", im.addrs["DSDT"])
	facs := fmt.Sprintf("%08X", im.addrs["FACS"])
	// iasl names the 32-bit and X_ fields alike; the first is the 32-bit one.
	for _, c := range []struct{ name, want string }{
		{"Revision", "06"},
		{"FACS Address", facs},
		{"DSDT Address", dsdt},
		{"SCI Interrupt", "0009"},
		{"SMI Command Port", "00000000"},
		{"PM1A Event Block Address", "00000600"},
		{"PM1A Control Block Address", "00000604"},
		{"PM Timer Block Address", "00000000"}, // testConfig has none: see TestFADTPMTimer
		{"PM1 Event Block Length", "04"},
		{"PM1 Control Block Length", "02"},
		{"Boot Flags (decoded below)", "0025"},
		{"Value to cause reset", "06"},
		{"FADT Minor Revision", "00"},
	} {
		if got := value(t, fs, c.name); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	flags := decoded(dsl, "Flags (decoded below)")
	for name, want := range map[string]string{
		"WBINVD instruction is operational (V1)":  "1",
		"All CPUs support C1 (V1)":                "1",
		"Control Method Power Button (V1)":        "0",
		"Control Method Sleep Button (V1)":        "1",
		"Reset Register Supported (V2)":           "1",
		"Use APIC Cluster Model (V4)":             "0",
		"Use APIC Physical Destination Mode (V4)": "0",
		"Hardware Reduced (V5)":                   "0",
	} {
		if flags[name] != want {
			t.Errorf("flag %q = %q, want %s", name, flags[name], want)
		}
	}

	// The X_ fields: 64-bit DSDT, generic addresses of PM1a and reset.
	var x []field
	for i, fl := range fs {
		if fl.name == "FADT Minor Revision" {
			x = fs[i:]
		}
	}
	if got := value(t, x, "DSDT Address"); got != "00000000"+dsdt {
		t.Errorf("X_DSDT = %s, want %s", got, dsdt)
	}
	if got := value(t, x, "FACS Address"); got != "0000000000000000" {
		t.Errorf("X_FIRMWARE_CTRL = %s, want 0 (FACS below 4 GiB)", got)
	}
	gasAt := func(name string) [3]string {
		for i, fl := range fs {
			if fl.name == name && i+5 < len(fs) {
				return [3]string{fs[i+1].value, fs[i+2].value, fs[i+5].value} // space, width, address
			}
		}
		t.Fatalf("no generic address %q", name)
		return [3]string{}
	}
	for name, want := range map[string][3]string{
		"Reset Register":     {"01 [SystemIO]", "08", "0000000000000CF9"},
		"PM1A Event Block":   {"01 [SystemIO]", "20", "0000000000000600"},
		"PM1A Control Block": {"01 [SystemIO]", "10", "0000000000000604"},
	} {
		if got := gasAt(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// decoded returns the "name : bit" lines iasl prints below a field marked
// "(decoded below)".
func decoded(dsl, field string) map[string]string {
	m := map[string]string{}
	in := false
	for _, line := range splitLines(dsl) {
		if fieldRE.MatchString(line) {
			in = fieldRE.FindStringSubmatch(line)[1] == field
			continue
		}
		if in {
			if name, v, ok := cut(line, " : "); ok {
				m[name] = v
			} else {
				in = false
			}
		}
	}
	return m
}

// With a PM timer: PM_TMR_BLK, its length 4, TMR_VAL_EXT (32 bits), as iasl
// reads them.
func TestFADTPMTimer(t *testing.T) {
	cfg := testConfig(2)
	cfg.PM.PMTimer = 0x608
	im := build(t, cfg)
	fs := fields(iasl(t, "FACP", im.tables["FACP"]))
	for _, c := range []struct{ name, want string }{
		{"PM Timer Block Address", "00000608"},
		{"PM Timer Block Length", "04"},
	} {
		if got := value(t, fs, c.name); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
	if got := decoded(iasl(t, "FACP", im.tables["FACP"]), "Flags (decoded below)")["32-bit PM Timer (V1)"]; got != "1" {
		t.Errorf("flag 32-bit PM Timer = %q, want 1", got)
	}
}
