package acpi

import (
	"fmt"
	"strings"
	"testing"
)

// madtEntries disassembles the MADT and returns its subtables by type name.
func madtEntries(t *testing.T, cfg Config) map[string][][]field {
	t.Helper()
	im := build(t, cfg)
	fs := fields(iasl(t, "APIC", im.tables["APIC"]))
	if got := value(t, fs, "Local Apic Address"); got != "FEE00000" {
		t.Errorf("local APIC address %s, want FEE00000", got)
	}
	if got := value(t, fs, "Flags (decoded below)"); got != "00000001" {
		t.Errorf("MADT flags %s, want PCAT_COMPAT", got)
	}
	by := map[string][][]field{}
	for _, st := range subtables(fs) {
		typ := st[0].value // e.g. "00 [Processor Local APIC]"
		typ = typ[strings.Index(typ, "[")+1 : len(typ)-1]
		by[typ] = append(by[typ], st)
	}
	return by
}

func get(st []field, name string) string {
	for _, f := range st {
		if f.name == name {
			return f.value
		}
	}
	return "<missing " + name + ">"
}

func TestMADTSmall(t *testing.T) {
	by := madtEntries(t, testConfig(4))
	lapics := by["Processor Local APIC"]
	if len(lapics) != 4 || len(by["Processor Local x2APIC"]) != 0 {
		t.Fatalf("%d local APIC and %d x2APIC entries, want 4 and 0", len(lapics), len(by["Processor Local x2APIC"]))
	}
	for i, st := range lapics {
		id := fmt.Sprintf("%02X", i)
		if get(st, "Local Apic ID") != id || get(st, "Processor ID") != id || get(st, "Flags (decoded below)") != "00000001" {
			t.Errorf("local APIC entry %d: %v", i, st)
		}
	}
	io := by["I/O APIC"]
	if len(io) != 1 || get(io[0], "Address") != "FEC00000" || get(io[0], "I/O Apic ID") != "00" || get(io[0], "Interrupt") != "00000000" {
		t.Errorf("I/O APIC entries: %v", io)
	}
	ovr := by["Interrupt Source Override"]
	want := [][3]string{{"00", "00000002", "0000"}, {"09", "00000009", "000D"}}
	if len(ovr) != len(want) {
		t.Fatalf("%d overrides, want %d", len(ovr), len(want))
	}
	for i, w := range want {
		if get(ovr[i], "Bus") != "00" || get(ovr[i], "Source") != w[0] || get(ovr[i], "Interrupt") != w[1] || get(ovr[i], "Flags (decoded below)") != w[2] {
			t.Errorf("override %d: %v, want source %s GSI %s flags %s", i, ovr[i], w[0], w[1], w[2])
		}
	}
	nmi := by["Local APIC NMI"]
	if len(nmi) != 1 || get(nmi[0], "Processor ID") != "FF" || get(nmi[0], "Interrupt Input LINT") != "01" {
		t.Errorf("local APIC NMI entries: %v", nmi)
	}
	if len(by["Local x2APIC NMI"]) != 0 {
		t.Errorf("x2APIC NMI entry without x2APIC CPUs")
	}
}

// TestMADT288 checks the switch to x2APIC entries: IDs 0..254 as local APIC
// entries, 255..287 as x2APIC entries, plus the x2APIC NMI entry.
func TestMADT288(t *testing.T) {
	by := madtEntries(t, testConfig(288))
	lapics, x2 := by["Processor Local APIC"], by["Processor Local x2APIC"]
	if len(lapics) != 255 || len(x2) != 33 {
		t.Fatalf("%d local APIC and %d x2APIC entries, want 255 and 33", len(lapics), len(x2))
	}
	for i, st := range lapics {
		if id := fmt.Sprintf("%02X", i); get(st, "Local Apic ID") != id || get(st, "Processor ID") != id {
			t.Errorf("local APIC entry %d: %v", i, st)
		}
	}
	for i, st := range x2 {
		id := fmt.Sprintf("%08X", 255+i)
		if get(st, "Processor x2Apic ID") != id || get(st, "Processor UID") != id || get(st, "Flags (decoded below)") != "00000001" {
			t.Errorf("x2APIC entry %d: %v, want ID and UID %s, enabled", i, st, id)
		}
	}
	nmi := by["Local x2APIC NMI"]
	if len(nmi) != 1 || get(nmi[0], "Processor UID") != "FFFFFFFF" || get(nmi[0], "Interrupt Input LINT") != "01" {
		t.Errorf("x2APIC NMI entries: %v", nmi)
	}
}

// TestMADTLayout checks the entry lengths add up to the table length, in
// bytes, independently of iasl.
func TestMADTLayout(t *testing.T) {
	for _, cpus := range []int{1, 255, 256, 288} {
		cfg := testConfig(cpus)
		m, err := madt(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		x2 := max(0, cpus-255)
		nmi := 6
		if x2 > 0 {
			nmi += 12
		}
		want := 44 + 8*(cpus-x2) + 16*x2 + 12 + 10*2 + nmi
		if len(m) != want || int(le.Uint32(m[4:])) != want || sum(m) != 0 {
			t.Errorf("%d CPUs: %d bytes, header says %d, sum %#x; want %d and 0", cpus, len(m), le.Uint32(m[4:]), sum(m), want)
		}
		n := 0
		for off := 44; off < len(m); off += int(m[off+1]) {
			n++
		}
		if n != cpus+1+2+1+min(x2, 1) {
			t.Errorf("%d CPUs: %d entries", cpus, n)
		}
	}
}

func TestMADTNoCPUs(t *testing.T) {
	cfg := testConfig(0)
	if _, _, err := Build(cfg, testRSDP, testTables); err == nil {
		t.Error("Build with 0 CPUs succeeded")
	}
}
