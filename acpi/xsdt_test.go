package acpi

import (
	"fmt"
	"testing"
)

// TestRootTables checks that the XSDT and RSDT list the FADT, MADT and DMAR
// (and nothing else), and that iasl reads the same addresses.
func TestRootTables(t *testing.T) {
	im := build(t, testConfig(4))
	var want []string
	for _, sig := range []string{"FACP", "APIC", "DMAR"} {
		want = append(want, fmt.Sprintf("%016X", im.addrs[sig]))
	}
	for _, c := range []struct {
		sig   string
		width int
	}{{"XSDT", 16}, {"RSDT", 8}} {
		var got []string
		for _, f := range fields(iasl(t, c.sig, im.tables[c.sig])) {
			if len(f.name) > 18 && f.name[:18] == "ACPI Table Address" {
				got = append(got, fmt.Sprintf("%016s", f.value))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s lists %v, want %v", c.sig, got, want)
		}
		if n := len(im.tables[c.sig]); n != headerLen+3*c.width/2 {
			t.Errorf("%s: %d bytes, want %d", c.sig, n, headerLen+3*c.width/2)
		}
	}
}
