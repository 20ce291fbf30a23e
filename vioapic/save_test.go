package vioapic

import (
	"testing"
	"time"
)

// TestSaveRestore: an IOAPIC saved with entries programmed, a level pin in
// service (Remote IRR set) and a pin the storm guard holds back restores
// as the same IOAPIC, and the held pin's deferred re-fire runs once.
func TestSaveRestore(t *testing.T) {
	s := &recSink{}
	a := New(3, s)
	setRTE(a, 4, 0x41|RTELevel)
	setRTE(a, 5, 0x42)
	a.SetLine(4, true) // a level pin fires: Remote IRR set
	if got := s.take(); !equal(got, []int{4}) {
		t.Fatalf("fires %v, want pin 4", got)
	}
	saved := a.Save()
	if saved.RTE[4]&RTERemoteIRR == 0 || saved.ID != 3 {
		t.Fatalf("saved %+v: want pin 4's Remote IRR set and ID 3", saved)
	}
	saved.Held = 1 << 4 // as if the storm guard held pin 4 back
	saved.RTE[4] &^= RTERemoteIRR

	var runs []func()
	b := New(0, s)
	b.SetScheduler(func(d time.Duration, f func()) { runs = append(runs, f) })
	if err := b.Restore(saved); err != nil {
		t.Fatal(err)
	}
	if got := b.Save(); got != saved {
		t.Errorf("restored IOAPIC saves as %+v, want %+v", got, saved)
	}
	if got := s.take(); len(got) != 0 || len(runs) != 1 {
		t.Fatalf("restore fired %v and armed %d re-fires; want none and one", got, len(runs))
	}
	runs[0]()
	if got := s.take(); !equal(got, []int{4}) {
		t.Errorf("the held pin's re-fire: fires %v, want pin 4 once", got)
	}
	if err := b.Restore(Saved{ID: 0x10}); err == nil {
		t.Error("an ID of 5 bits restored")
	}
}
