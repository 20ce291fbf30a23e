package acpi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	testRSDP   = 0xE0000
	testTables = 0xE0040
)

func testConfig(cpus int) Config {
	return Config{
		CPUs:      cpus,
		LAPICAddr: 0xFEE00000,
		IOAPICs:   []IOAPIC{{ID: 0, Addr: 0xFEC00000, GSIBase: 0, SourceID: 0x00F0}},
		Overrides: ISAOverrides(9),
		PM:        PM{PM1aEvt: 0x600, PM1aCnt: 0x604, SCI: 9, ResetPort: 0xCF9, ResetValue: 0x6},
		DMAR:      &DMAR{RegBase: 0xFED90000, IntrRemap: true, HostAddrWidth: 39},
		OEMID:     "GOVMM ",
	}
}

// image is a built set of tables, found by following the pointers from the
// RSDP the way an OS does.
type image struct {
	rsdp, blob []byte
	base       uint64
	tables     map[string][]byte // by signature (XSDT, RSDT, FACP, APIC, DMAR, DSDT, FACS)
	addrs      map[string]uint64
}

func build(t *testing.T, cfg Config) *image {
	t.Helper()
	r, blob, err := Build(cfg, testRSDP, testTables)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	im := &image{rsdp: r, blob: blob, base: testTables, tables: map[string][]byte{}, addrs: map[string]uint64{}}
	if len(r) != rsdpLen || string(r[:8]) != "RSD PTR " {
		t.Fatalf("RSDP: %d bytes, signature %q", len(r), r[:8])
	}
	im.load(t, "XSDT", le.Uint64(r[24:]))
	if a := le.Uint32(r[16:]); a != 0 {
		im.load(t, "RSDT", uint64(a))
	}
	x := im.tables["XSDT"]
	for off := headerLen; off < len(x); off += 8 {
		im.load(t, "", le.Uint64(x[off:]))
	}
	f := im.tables["FACP"]
	if f == nil {
		t.Fatal("no FADT in the XSDT")
	}
	im.load(t, "DSDT", le.Uint64(f[140:]))
	facsAddr := uint64(le.Uint32(f[36:]))
	if facsAddr == 0 {
		facsAddr = le.Uint64(f[132:])
	}
	im.load(t, "FACS", facsAddr)
	return im
}

// load checks that a table lies inside the blob, has the expected signature
// (if given), a length that fits and a zero checksum, and records it.
func (im *image) load(t *testing.T, want string, addr uint64) {
	t.Helper()
	if addr < im.base || addr+8 > im.base+uint64(len(im.blob)) {
		t.Fatalf("table %q at %#x is outside the blob %#x+%#x", want, addr, im.base, len(im.blob))
	}
	off := addr - im.base
	sig := string(im.blob[off : off+4])
	if want != "" && sig != want {
		t.Fatalf("table at %#x is %q, want %q", addr, sig, want)
	}
	n := uint64(le.Uint32(im.blob[off+4:]))
	if n < 36 || off+n > uint64(len(im.blob)) {
		t.Fatalf("%s at %#x: length %d runs outside the blob (%d bytes left)", sig, addr, n, uint64(len(im.blob))-off)
	}
	tb := im.blob[off : off+n]
	if sig != "FACS" && sum(tb) != 0 {
		t.Errorf("%s: bytes sum to %#x, want 0", sig, sum(tb))
	}
	if _, dup := im.tables[sig]; dup {
		t.Fatalf("table %s reached twice", sig)
	}
	im.tables[sig] = tb
	im.addrs[sig] = addr
}

// iasl disassembles one table with Debian's iasl (package acpica-tools) and
// returns the .dsl text. Any warning or error iasl prints (checksum, length,
// truncated subtables) fails the test.
func iasl(t *testing.T, sig string, table []byte) string {
	t.Helper()
	bin, err := exec.LookPath("iasl")
	if err != nil {
		t.Fatalf("iasl not found: install Debian's acpica-tools package (make deps does): %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sig+".dat"), table, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-d", sig+".dat")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("iasl -d %s.dat: %v\n%s", sig, err, out)
	}
	for _, bad := range []string{"Warning", "Error", "Incorrect", "too long", "not contain a valid", "Invalid"} {
		if bytes.Contains(out, []byte(bad)) {
			t.Errorf("iasl -d %s.dat reports %q:\n%s", sig, bad, out)
		}
	}
	dsl, err := os.ReadFile(filepath.Join(dir, sig+".dsl"))
	if err != nil {
		t.Fatalf("iasl -d %s.dat wrote no .dsl: %v\n%s", sig, err, out)
	}
	for _, bad := range []string{"Incorrect checksum", "****", "Invalid"} {
		if bytes.Contains(dsl, []byte(bad)) {
			t.Errorf("iasl disassembly of %s contains %q", sig, bad)
		}
	}
	return string(dsl)
}

type field struct{ name, value string }

var fieldRE = regexp.MustCompile(`(?m)^\[[0-9A-F]+h [0-9]+ +[0-9]+\] +(.*?) : (.*)$`)

// fields returns the "Name : Value" lines of a data-table disassembly, in
// order, with values trimmed.
func fields(dsl string) []field {
	var fs []field
	for _, m := range fieldRE.FindAllStringSubmatch(dsl, -1) {
		fs = append(fs, field{strings.TrimSpace(m[1]), strings.TrimSpace(m[2])})
	}
	return fs
}

// value returns the first field with that name, failing if there is none.
func value(t *testing.T, fs []field, name string) string {
	t.Helper()
	for _, f := range fs {
		if f.name == name {
			return f.value
		}
	}
	t.Fatalf("no field %q in the disassembly", name)
	return ""
}

// subtables splits MADT/DMAR fields into subtables, each starting at a
// "Subtable Type" field.
func subtables(fs []field) [][]field {
	var out [][]field
	for _, f := range fs {
		if f.name == "Subtable Type" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], f)
		}
	}
	return out
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// cut splits a "  name : value" line, trimmed.
func cut(line, sep string) (string, string, bool) {
	a, b, ok := strings.Cut(line, sep)
	return strings.TrimSpace(a), strings.TrimSpace(b), ok
}
