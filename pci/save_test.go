package pci

import (
	"strings"
	"testing"
)

// TestSaveRestore: a function the guest has moved (BAR0 reprogrammed),
// enabled (memory, bus master) and given MSI-X vectors, one of them masked
// with a message held pending, restored into a new bus's identical
// function: its BAR decodes at the moved base (OnBARChange told), its
// table reads back, and unmasking the vector sends the held message once.
func TestSaveRestore(t *testing.T) {
	r := newRig(t)
	r.cfgWrite(t, 1, regBAR0, 4, uint32(testMMIOBase+0x100000))
	r.enable(t)
	r.msixControl(t, true, false)
	r.setupVector(t, 2, 0xFEE01000, 0x4042, true)
	r.msix.Signal(2)
	if got := r.sink.take(); len(got) != 0 {
		t.Fatalf("a masked vector sent %v", got)
	}
	saved := r.f.Save()

	r2 := newRig(t)
	var moved []uint64
	r2.f.OnBARChange(func(bar int, base uint64, decoding bool) {
		if bar == 0 && decoding {
			moved = append(moved, base)
		}
	})
	if err := r2.f.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if b, on := r2.f.BARBase(0); b != testMMIOBase+0x100000 || !on || len(moved) != 1 || moved[0] != b {
		t.Errorf("BAR0 at %#x decoding %v (OnBARChange %#x), want %#x", b, on, moved, testMMIOBase+0x100000)
	}
	if !r2.f.BusMaster() || !r2.msix.Enabled() || !r2.msix.Pending(2) {
		t.Errorf("bus master %v, MSI-X enabled %v, vector 2 pending %v: want all", r2.f.BusMaster(), r2.msix.Enabled(), r2.msix.Pending(2))
	}
	if again := r2.f.Save(); again.MSIX.Entries[2] != saved.MSIX.Entries[2] || string(again.Config) != string(saved.Config) {
		t.Errorf("restored function saves as %+v, want %+v", again, saved)
	}
	r2.mmio(t, testMMIOBase+0x100000+2*16+12, true, 4, 0) // unmask vector 2
	if got := r2.sink.take(); len(got) != 1 || got[0].addr != 0xFEE01000 || got[0].data != 0x4042 {
		t.Errorf("unmasking sent %v, want the held message once", got)
	}
	bad := saved
	bad.MSIX = &MSIXSaved{Entries: make([][4]uint32, 9), Pending: saved.MSIX.Pending}
	if err := r2.f.Restore(bad); err == nil || !strings.Contains(err.Error(), "9 vectors") {
		t.Errorf("a table of another size: %v", err)
	}
}
