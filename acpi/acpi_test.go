package acpi

import (
	"strings"
	"testing"
)

// TestBuild follows every pointer from the RSDP (helpers_test.go: build
// checks each table lies inside the blob, fits its length and sums to 0) and
// runs every table through iasl, which must report no checksum or length
// problem.
func TestBuild(t *testing.T) {
	for _, cpus := range []int{1, 4, 288} {
		im := build(t, testConfig(cpus))
		for _, sig := range []string{"XSDT", "RSDT", "FACP", "APIC", "DMAR", "DSDT", "FACS"} {
			tb, ok := im.tables[sig]
			if !ok {
				t.Fatalf("%d CPUs: no %s reachable from the RSDP", cpus, sig)
			}
			if sig != "FACS" && im.addrs[sig]%8 != 0 {
				t.Errorf("%s at %#x is not 8-byte aligned", sig, im.addrs[sig])
			}
			iasl(t, sig, tb)
		}
		if len(im.tables) != 7 {
			t.Errorf("%d tables reachable, want 7", len(im.tables))
		}
	}
}

func TestBuildErrors(t *testing.T) {
	for _, c := range []struct {
		name         string
		edit         func(*Config)
		rsdp, tables uint64
		want         string
	}{
		{"unaligned RSDP", func(*Config) {}, 0xE0008, 0xE0040, "aligned"},
		{"overlap", func(*Config) {}, 0xE0040, 0xE0000, "overlaps"},
		{"long OEM ID", func(c *Config) { c.OEMID = "GOVMM-X" }, 0xE0000, 0xE0040, "OEM ID"},
		{"no CPUs", func(c *Config) { c.CPUs = 0 }, 0xE0000, 0xE0040, "CPUs"},
		{"no PM1a", func(c *Config) { c.PM.PM1aCnt = 0 }, 0xE0000, 0xE0040, "PM1a"},
		{"DMAR width 0", func(c *Config) { c.DMAR.HostAddrWidth = 0 }, 0xE0000, 0xE0040, "width"},
	} {
		cfg := testConfig(4)
		c.edit(&cfg)
		_, _, err := Build(cfg, c.rsdp, c.tables)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func TestBuildDefaults(t *testing.T) {
	cfg := testConfig(2)
	cfg.OEMID, cfg.LAPICAddr = "", 0
	im := build(t, cfg)
	if m := im.tables["APIC"]; string(m[10:16]) != "GOVMM " || le.Uint32(m[36:]) != DefaultLAPICAddr {
		t.Errorf("defaults: OEM ID %q, local APIC %#x", m[10:16], le.Uint32(m[36:]))
	}
}
