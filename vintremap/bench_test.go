package vintremap

import "testing"

// BenchmarkTranslateMSI is one remappable MSI through an IRTE with SID
// verification: the hot path of every device interrupt.
func BenchmarkTranslateMSI(b *testing.B) {
	r := newRig(b, Options{EIM: true})
	r.linux(true)
	r.setIRTE(33, irte{p: true, vector: 0x41, dst: 7, svt: svtSID, sid: 0x0010})
	addr, data := remappableMSI(33, true, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.u.TranslateMSI(addr, data, 0x0010); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateIOAPIC is one remappable redirection entry.
func BenchmarkTranslateIOAPIC(b *testing.B) {
	r := newRig(b, Options{EIM: true})
	r.linux(true)
	r.setIRTE(2, irte{p: true, tm: true, vector: 0x42, dst: 7})
	rte := uint64(2)<<49 | 1<<48 | 1<<15 | 0x42
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.u.TranslateIOAPIC(rte, 0xF0F8); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTranslateDoesNotAllocate(t *testing.T) {
	r := newRig(t, Options{})
	r.linux(false)
	r.setIRTE(1, irte{p: true, vector: 0x41, dst: 1 << 8})
	addr, data := remappableMSI(1, true, 0)
	if n := testing.AllocsPerRun(100, func() { r.u.TranslateMSI(addr, data, 0) }); n != 0 {
		t.Fatalf("%v allocs per translation", n)
	}
}
