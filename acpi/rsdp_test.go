package acpi

import "testing"

func TestRSDP(t *testing.T) {
	im := build(t, testConfig(4))
	r := im.rsdp
	if sum(r[:20]) != 0 || sum(r) != 0 {
		t.Errorf("RSDP checksums: first 20 bytes sum %#x, all 36 sum %#x; want 0, 0", sum(r[:20]), sum(r))
	}
	if r[15] != 2 || le.Uint32(r[20:]) != rsdpLen || string(r[9:15]) != "GOVMM " {
		t.Errorf("RSDP revision %d length %d OEM %q", r[15], le.Uint32(r[20:]), r[9:15])
	}
	if uint64(le.Uint32(r[16:])) != im.addrs["RSDT"] || le.Uint64(r[24:]) != im.addrs["XSDT"] {
		t.Errorf("RSDP points at RSDT %#x XSDT %#x", le.Uint32(r[16:]), le.Uint64(r[24:]))
	}
}

// Above 4 GiB there is no RSDT: RsdtAddress is 0 and Linux uses the XSDT
// (ACPICA: revision > 1 and XsdtAddress != 0); the FACS moves to
// X_FIRMWARE_CTRL.
func TestRSDPHigh(t *testing.T) {
	const high = 1 << 32
	r, blob, err := Build(testConfig(2), testRSDP, high)
	if err != nil {
		t.Fatal(err)
	}
	if le.Uint32(r[16:]) != 0 || le.Uint64(r[24:]) < high || sum(r) != 0 {
		t.Errorf("RSDP for tables at 4 GiB: RSDT %#x XSDT %#x", le.Uint32(r[16:]), le.Uint64(r[24:]))
	}
	f := blob[le.Uint64(r[24:])-high+headerLen:] // XSDT entry 0 = FADT
	f = blob[le.Uint64(f)-high:]
	if string(f[:4]) != "FACP" || le.Uint32(f[36:]) != 0 || le.Uint64(f[132:]) != high || le.Uint32(f[40:]) != 0 {
		t.Errorf("FADT above 4 GiB: FIRMWARE_CTRL %#x X_FIRMWARE_CTRL %#x DSDT %#x", le.Uint32(f[36:]), le.Uint64(f[132:]), le.Uint32(f[40:]))
	}
}
