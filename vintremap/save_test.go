package vintremap

import (
	"strings"
	"testing"
)

// TestSaveRestore: a unit in Linux's state (table and queue in force, a
// fault recorded) restored into a new unit over the same memory is the
// same unit: it saves the same, translates the same entry to the same
// message, and another unit's capabilities are refused.
func TestSaveRestore(t *testing.T) {
	r := faultRig(t)
	r.setIRTE(5, irte{p: true, vector: 0x45, dst: 1 << 8})
	a7, d7 := remappableMSI(7, false, 0)
	if _, err := r.u.TranslateMSI(a7, d7, 0); err == nil {
		t.Fatal("a not-present entry translated")
	}
	saved := r.u.Save()
	if saved.GSTS == 0 || saved.IRTAddr == 0 || saved.IQSize == 0 || saved.FR[0][1]>>63 == 0 {
		t.Fatalf("saved %+v: want IR and QI on, the table and queue in force, a fault recorded", saved)
	}
	u2 := New(r.mem, r.irq, Options{EIM: true})
	if err := u2.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if got := u2.Save(); got != saved {
		t.Errorf("restored unit saves as\n%+v\nwant\n%+v", got, saved)
	}
	a5, d5 := remappableMSI(5, false, 0)
	m1, err1 := r.u.TranslateMSI(a5, d5, 0)
	m2, err2 := u2.TranslateMSI(a5, d5, 0)
	if err1 != nil || err2 != nil || m1 != m2 || m2.Vector != 0x45 {
		t.Errorf("translations differ: %+v %v and %+v %v", m1, err1, m2, err2)
	}
	other := New(r.mem, r.irq, Options{})
	if err := other.Restore(saved); err == nil || !strings.Contains(err.Error(), "capabilities") {
		t.Errorf("a unit without EIM took an EIM unit's state: %v", err)
	}
}
