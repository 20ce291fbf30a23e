package accounting

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestCauseNamesUnique(t *testing.T) {
	seen := map[string]Cause{}
	for c := Cause(0); c < NumCauses; c++ {
		n := c.String()
		if prev, ok := seen[n]; ok {
			t.Fatalf("causes %d and %d are both named %q", prev, c, n)
		}
		seen[n] = c
	}
	if got := APICCause(true, true, 0x30).String(); got != "msr_x2apic_icr_write" {
		t.Errorf("x2APIC ICR write is %q", got)
	}
	if got := APICCause(false, false, 0x30).String(); got != "mmio_apic_icr_read" {
		t.Errorf("xAPIC ICR read is %q", got)
	}
}

// TestSections: a section holds exactly the exits between its markers, not
// the marker exits themselves.
func TestSections(t *testing.T) {
	a := NewVM(2)
	a.Delivery = "avic"
	a.CPUs[0].Exit(CauseHLT) // before: not in the section
	a.CPUs[0].Exit(CausePIOMark)
	a.Mark(0, 7)
	a.CPUs[0].Exit(APICCause(true, true, 0x30))
	a.CPUs[1].Exit(APICCause(true, true, 0x0B))
	a.CPUs[1].Exit(CauseHLT)
	a.CPUs[0].Exit(CausePIOMark)
	a.Mark(0, 0)
	a.CPUs[1].Exit(CauseHLT) // after: not in the section
	secs := a.Sections()
	if len(secs) != 1 || secs[0].ID != 7 {
		t.Fatalf("sections %+v", secs)
	}
	if got := secs[0].CPUs[0].Total(); got != 1 {
		t.Errorf("CPU 0 section exits = %d, want 1 (the ICR write)", got)
	}
	if got := secs[0].CPUs[1].Total(); got != 2 {
		t.Errorf("CPU 1 section exits = %d, want 2", got)
	}
	if all, own, _, _ := a.LastSection(1); all != 3 || own != 2 {
		t.Errorf("LastSection(1) exits all %d own %d, want 3 and 2", all, own)
	}
	r := a.Report()
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Delivery != "avic" {
		t.Errorf("JSON delivery %q, want avic", back.Delivery)
	}
	if back.Total.Exits != 7 || back.Sections[0].Total.ByCause["msr_x2apic_icr_write"] != 1 {
		t.Errorf("JSON round trip: %+v", back.Total)
	}
	buf.Reset()
	r.WriteTable(&buf)
	for _, want := range []string{"delivery: avic", "exits per vCPU", "section 7", "msr_x2apic_eoi_write"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestWithdrawn: an injection taken back at the SYSCALL doorbell leaves
// Injected and the vector's count as before it and is counted on its own,
// in the snapshot, sections, JSON and table.
func TestWithdrawn(t *testing.T) {
	a := NewVM(2)
	a.Mark(0, 3)
	a.CPUs[1].Inject(0xec)
	a.CPUs[1].Inject(0xfb)
	a.CPUs[1].Withdraw(0xec)
	a.CPUs[1].PVEOIs.Add(1)
	a.Mark(0, 0)
	r := a.Report()
	c := r.CPUs[1]
	if c.Injected != 1 || c.InjectedVec["0xec"] != 0 || c.InjectedVec["0xfb"] != 1 || c.Withdrawn != 1 {
		t.Errorf("CPU 1: injected %d %v, withdrawn %d; want 1, {0xfb:1}, 1", c.Injected, c.InjectedVec, c.Withdrawn)
	}
	if r.Total.Withdrawn != 1 || r.Sections[0].Total.Withdrawn != 1 || r.CPUs[0].Withdrawn != 0 {
		t.Errorf("withdrawn: total %d, section %d, CPU 0 %d", r.Total.Withdrawn, r.Sections[0].Total.Withdrawn, r.CPUs[0].Withdrawn)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"withdrawn": 1`) {
		t.Errorf("JSON lacks the withdrawn count:\n%s", buf.String())
	}
	buf.Reset()
	r.WriteTable(&buf)
	for _, want := range []string{"withdrawn_at_syscall_doorbell  1", "pv_eois                        1"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func BenchmarkExit(b *testing.B) {
	a := NewVM(1)
	b.ReportAllocs()
	for b.Loop() {
		a.CPUs[0].Exit(CauseHLT)
	}
}
