package acpi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDSDT(t *testing.T) {
	im := build(t, testConfig(4))
	d := im.tables["DSDT"]
	want := []byte{0x08, '_', 'S', '5', '_', 0x12, 0x08, 0x04, 0x0A, 0x05, 0x0A, 0x05, 0x00, 0x00}
	if !bytes.Equal(d[headerLen:], want) {
		t.Errorf("DSDT AML % x, want % x", d[headerLen:], want)
	}
	dsl := strings.Join(strings.Fields(iasl(t, "DSDT", d)), " ")
	if !strings.Contains(dsl, "Name (_S5, Package (0x04) // _S5_: S5 System State { 0x05, 0x05, Zero, Zero })") {
		t.Errorf("DSDT disassembly has no \\_S5 package {5, 5, 0, 0}:\n%s", dsl)
	}
	if PoweroffValue != 0x3400 {
		t.Errorf("PoweroffValue = %#x, want 0x3400", PoweroffValue)
	}
}

// TestDSDTEvaluate loads the DSDT, FADT and FACS into ACPICA's acpiexec (also
// from acpica-tools) and evaluates \_S5_ as Linux's acpi_get_sleep_type_data
// would.
func TestDSDTEvaluate(t *testing.T) {
	bin, err := exec.LookPath("acpiexec")
	if err != nil {
		t.Fatalf("acpiexec not found: install Debian's acpica-tools package (make deps does): %v", err)
	}
	im := build(t, testConfig(4))
	dir := t.TempDir()
	var args []string
	args = append(args, "-b", `evaluate \_S5_`)
	for _, sig := range []string{"DSDT", "FACP", "FACS"} {
		if err := os.WriteFile(filepath.Join(dir, sig+".dat"), im.tables[sig], 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, sig+".dat")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput() // acpiexec's own hardware self-tests fail harmlessly (no GPEs, no timer)
	s := strings.Join(strings.Fields(string(out)), " ")
	want := "[Package] Contains 4 Elements: [Integer] = 0000000000000005 [Integer] = 0000000000000005 [Integer] = 0000000000000000 [Integer] = 0000000000000000"
	if !strings.Contains(s, want) {
		t.Errorf("acpiexec did not evaluate \\_S5_ to {5, 5, 0, 0}:\n%s", out)
	}
	for _, bad := range []string{"Warning", "mismatch", "Could not"} {
		if strings.Contains(s, bad) {
			t.Errorf("acpiexec reports %q about the tables:\n%s", bad, out)
		}
	}
}

func TestAMLPkgLength(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x01}},
		{62, []byte{0x3F}},
		{63, []byte{0x41, 0x04}},         // 65 = 0x41
		{4000, []byte{0x42, 0xFA}},       // 4002 = 0xFA2
		{4094, []byte{0x81, 0x00, 0x01}}, // 4097 = 0x1001 needs 3 bytes
	} {
		if got := amlPkgLength(c.n); !bytes.Equal(got, c.want) {
			t.Errorf("amlPkgLength(%d) = % x, want % x", c.n, got, c.want)
		}
	}
}

func TestAMLInt(t *testing.T) {
	for v, want := range map[uint64][]byte{
		0: {0x00}, 1: {0x01}, 5: {0x0A, 5}, 0x1234: {0x0B, 0x34, 0x12},
		0x12345678: {0x0C, 0x78, 0x56, 0x34, 0x12}, 1 << 32: {0x0E, 0, 0, 0, 0, 1, 0, 0, 0},
	} {
		if got := amlInt(v); !bytes.Equal(got, want) {
			t.Errorf("amlInt(%#x) = % x, want % x", v, got, want)
		}
	}
}
