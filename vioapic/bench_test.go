// Benchmarks of the device interrupt path.

package vioapic

import "testing"

// BenchmarkSetLineEdge is one edge interrupt: a device raises and lowers
// an unmasked edge pin, which fires once.
func BenchmarkSetLineEdge(b *testing.B) {
	s := &countSink{}
	a := New(0, s)
	setRTE(a, 4, 0x34)
	b.ReportAllocs()
	for b.Loop() {
		a.SetLine(4, true)
		a.SetLine(4, false)
	}
	if s.n.Load() == 0 {
		b.Fatal("nothing fired")
	}
}

// BenchmarkLevelEOI is one level interrupt cycle: assert, fire, EOI,
// deassert.
func BenchmarkLevelEOI(b *testing.B) {
	s := &countSink{}
	a := New(0, s)
	setRTE(a, 9, RTELevel|0x39)
	b.ReportAllocs()
	for b.Loop() {
		a.SetLine(9, true)
		a.SetLine(9, false)
		a.EOI(0x39)
	}
}
