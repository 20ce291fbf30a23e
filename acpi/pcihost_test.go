package acpi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var testPCI = PCIHost{ECAMBase: 0xE0000000, MMIOBase: 0xC0000000, MMIOSize: 0x10000000, IOBase: 0xC000, IOSize: 0x1000}

func pciConfig() Config {
	c := testConfig(4)
	p := testPCI
	c.PCI = &p
	return c
}

// TestMCFG checks the MCFG's one allocation as iasl reads it, and that the
// XSDT and RSDT point at it after the other tables.
func TestMCFG(t *testing.T) {
	im := build(t, pciConfig())
	m := im.tables["MCFG"]
	if m == nil {
		t.Fatal("no MCFG in the XSDT")
	}
	if len(m) != headerLen+mcfgReserved+mcfgAllocation {
		t.Errorf("MCFG: %d bytes, want %d", len(m), headerLen+mcfgReserved+mcfgAllocation)
	}
	fs := fields(iasl(t, "MCFG", m))
	for name, want := range map[string]string{
		"Revision":             "01",
		"Base Address":         "00000000E0000000",
		"Segment Group Number": "0000",
		"Start Bus Number":     "00",
		"End Bus Number":       "00",
	} {
		if got := value(t, fs, name); got != want {
			t.Errorf("MCFG %s = %s, want %s", name, got, want)
		}
	}
	x := im.tables["XSDT"]
	if n := (len(x) - headerLen) / 8; n != 4 {
		t.Fatalf("XSDT lists %d tables, want 4 (FACP, APIC, DMAR, MCFG)", n)
	}
	if got := le.Uint64(x[headerLen+3*8:]); got != im.addrs["MCFG"] {
		t.Errorf("XSDT's last entry %#x, want the MCFG at %#x", got, im.addrs["MCFG"])
	}
	r := im.tables["RSDT"]
	if got := le.Uint32(r[headerLen+3*4:]); uint64(got) != im.addrs["MCFG"] {
		t.Errorf("RSDT's last entry %#x, want the MCFG at %#x", got, im.addrs["MCFG"])
	}
}

// TestNoPCI: without Config.PCI there is no MCFG and the DSDT holds only
// \_S5 (TestDSDT checks its bytes).
func TestNoPCI(t *testing.T) {
	im := build(t, testConfig(4))
	if im.tables["MCFG"] != nil {
		t.Error("MCFG present without Config.PCI")
	}
	if bytes.Contains(im.tables["DSDT"], []byte("PCI0")) {
		t.Error("DSDT has PCI0 without Config.PCI")
	}
}

// TestDSDTPCI checks the host bridge and motherboard-resources devices as
// iasl disassembles them.
func TestDSDTPCI(t *testing.T) {
	im := build(t, pciConfig())
	dsl := strings.Join(strings.Fields(iasl(t, "DSDT", im.tables["DSDT"])), " ")
	for _, want := range []string{
		`Name (_S5, Package (0x04)`,
		`Scope (_SB) { Device (PCI0) {`,
		`Name (_HID, EisaId ("PNP0A08") /* PCI Express Bus */)`,
		`Name (_CID, EisaId ("PNP0A03") /* PCI Bus */)`,
		`Name (_SEG, Zero)`, `Name (_BBN, Zero)`, `Name (_UID, Zero)`,
		`WordBusNumber (ResourceProducer, MinFixed, MaxFixed, PosDecode, 0x0000, // Granularity 0x0000, // Range Minimum 0x0000, // Range Maximum 0x0000, // Translation Offset 0x0001, // Length`,
		`IO (Decode16, 0x0CF8, // Range Minimum 0x0CF8, // Range Maximum 0x01, // Alignment 0x08, // Length`,
		`WordIO (ResourceProducer, MinFixed, MaxFixed, PosDecode, EntireRange, 0x0000, // Granularity 0xC000, // Range Minimum 0xCFFF, // Range Maximum 0x0000, // Translation Offset 0x1000, // Length`,
		`DWordMemory (ResourceProducer, PosDecode, MinFixed, MaxFixed, NonCacheable, ReadWrite, 0x00000000, // Granularity 0xC0000000, // Range Minimum 0xCFFFFFFF, // Range Maximum 0x00000000, // Translation Offset 0x10000000, // Length`,
		`Device (RES0) { Name (_HID, EisaId ("PNP0C02") /* PNP Motherboard Resources */)`,
		`Memory32Fixed (ReadWrite, 0xE0000000, // Address Base 0x00100000, // Address Length`,
	} {
		if !strings.Contains(dsl, want) {
			t.Errorf("DSDT disassembly lacks %q:\n%s", want, dsl)
		}
	}
}

// TestDSDTPCIRecompile compiles iasl's disassembly back to AML: iasl must
// encode the same bytes govmm wrote (the AML encoder agrees with the
// reference compiler on every object).
func TestDSDTPCIRecompile(t *testing.T) {
	im := build(t, pciConfig())
	d := im.tables["DSDT"]
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "DSDT.dsl"), []byte(iasl(t, "DSDT", d)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("iasl", "-p", "out", "DSDT.dsl")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iasl DSDT.dsl: %v\n%s", err, out)
	}
	aml, err := os.ReadFile(filepath.Join(dir, "out.aml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(aml[headerLen:], d[headerLen:]) {
		t.Errorf("iasl encodes the DSDT body as\n% x\ngovmm wrote\n% x", aml[headerLen:], d[headerLen:])
	}
}

// TestDSDTPCIEvaluate has acpiexec evaluate the devices' objects, as the
// OS's namespace walk would.
func TestDSDTPCIEvaluate(t *testing.T) {
	bin, err := exec.LookPath("acpiexec")
	if err != nil {
		t.Fatalf("acpiexec not found: install Debian's acpica-tools package (make deps does): %v", err)
	}
	im := build(t, pciConfig())
	dir := t.TempDir()
	var cmds []string
	for _, obj := range []string{`\_SB.PCI0._HID`, `\_SB.PCI0._CID`, `\_SB.PCI0._SEG`, `\_SB.RES0._HID`, `\_SB.RES0._CRS`} {
		cmds = append(cmds, "evaluate "+obj)
	}
	args := []string{"-b", strings.Join(cmds, ";")} // acpiexec runs one -b, its commands split at ';'
	for _, sig := range []string{"DSDT", "FACP", "FACS"} {
		if err := os.WriteFile(filepath.Join(dir, sig+".dat"), im.tables[sig], 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, sig+".dat")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	s := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{
		"[Integer] = 00000000080AD041",              // EisaId("PNP0A08")
		"[Integer] = 00000000030AD041",              // EisaId("PNP0A03")
		"[Integer] = 0000000000000000",              // _SEG
		"[Integer] = 00000000020CD041",              // EisaId("PNP0C02")
		"86 09 00 01 00 00 00 E0 00 00 10 00 79 00", // Memory32Fixed, end tag
	} {
		if !strings.Contains(s, want) {
			t.Errorf("acpiexec output lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"Warning", "mismatch", "Could not", "AE_NOT_FOUND"} {
		if strings.Contains(s, bad) {
			t.Errorf("acpiexec reports %q:\n%s", bad, out)
		}
	}
}

func TestPCIHostCheck(t *testing.T) {
	for name, p := range map[string]PCIHost{
		"ecam unaligned":   {ECAMBase: 0xE0080000, MMIOBase: 0xC0000000, MMIOSize: 0x1000, IOBase: 0xC000, IOSize: 0x100},
		"ecam above 4 GiB": {ECAMBase: 1 << 32, MMIOBase: 0xC0000000, MMIOSize: 0x1000, IOBase: 0xC000, IOSize: 0x100},
		"mmio past 4 GiB":  {ECAMBase: 0xE0000000, MMIOBase: 0xF0000000, MMIOSize: 0x20000000, IOBase: 0xC000, IOSize: 0x100},
		"no mmio":          {ECAMBase: 0xE0000000, MMIOBase: 0xC0000000, IOBase: 0xC000, IOSize: 0x100},
		"io past 0xffff":   {ECAMBase: 0xE0000000, MMIOBase: 0xC0000000, MMIOSize: 0x1000, IOBase: 0xF000, IOSize: 0x2000},
		"no io":            {ECAMBase: 0xE0000000, MMIOBase: 0xC0000000, MMIOSize: 0x1000, IOBase: 0xC000},
	} {
		c := testConfig(1)
		c.PCI = &p
		if _, _, err := Build(c, testRSDP, testTables); err == nil {
			t.Errorf("%s: Build accepted %+v", name, p)
		}
	}
}

func TestEISAID(t *testing.T) {
	for id, want := range map[string]uint64{"PNP0A03": 0x030AD041, "PNP0A08": 0x080AD041, "PNP0C02": 0x020CD041} {
		if got := eisaID(id); got != want {
			t.Errorf("eisaID(%q) = %#x, want %#x", id, got, want)
		}
	}
}
