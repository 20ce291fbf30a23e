package accounting

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

// TestSectionsOnKVMLAPIC: with KVM's LAPIC a section records KVM's
// statistics per vCPU over it, the marker's own port exits taken out of
// KVM's exits and I/O exits as they are out of govmm's counts; the guest
// reads back KVM's exits less the host's interrupts'; a sample that fails
// leaves the section without KVM's counts, saying why.
func TestSectionsOnKVMLAPIC(t *testing.T) {
	a := NewVM(2)
	a.LAPIC = "kvm"
	var now []KVMCounts
	var fail error
	a.KVM = func() ([]KVMCounts, error) { return append([]KVMCounts(nil), now...), fail }
	now = []KVMCounts{{KVMExits: 100, KVMIRQExits: 10, KVMIOExits: 5}, {KVMExits: 50, KVMHaltExits: 7}}
	a.CPUs[0].Exits.Count(exitcause.PIOMark)
	a.Mark(0, 1)
	// In the section: CPU 0 sends 3 IPIs (3 exits KVM serves), takes 4 host
	// interrupts and reads the marker twice; CPU 1 halts and EOIs 3 times.
	a.CPUs[0].Exits.Count(exitcause.PIOMark)
	a.CPUs[0].Exits.Count(exitcause.PIOMark)
	a.CPUs[0].Exits.Count(exitcause.PIOMark) // the closing write
	now = []KVMCounts{{KVMExits: 100 + 3 + 4 + 3, KVMIRQExits: 14, KVMIOExits: 5 + 3}, {KVMExits: 56, KVMHaltExits: 10}}
	a.Mark(0, 0)
	sec := a.Sections()[0]
	if sec.KVM == nil {
		t.Fatalf("section has no KVM counts: %q", sec.KVMErr)
	}
	if got := sec.KVM[0]; got[KVMExits] != 7 || got[KVMIRQExits] != 4 || got[KVMIOExits] != 0 || got.GuestExits() != 3 {
		t.Errorf("CPU 0: %v (guest exits %d), want exits 7, irq_exits 4, io_exits 0, guest exits 3", got, got.GuestExits())
	}
	if c := a.LastSection(1); c.All != 9 || c.Own != 6 {
		t.Errorf("LastSection(1): all %d own %d, want 9 and 6 (KVM's guest exits)", c.All, c.Own)
	}
	var buf bytes.Buffer
	a.Report().WriteTable(&buf)
	for _, want := range []string{"local APIC: KVM's", "section 1, KVM's statistics", "irq_exits"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}

	a.Mark(0, 2)
	fail = errors.New("EIO")
	a.Mark(0, 0)
	if sec := a.Sections()[1]; sec.KVM != nil || !strings.Contains(sec.KVMErr, "EIO") {
		t.Errorf("a failed sample: KVM %v, error %q", sec.KVM, sec.KVMErr)
	}
}
