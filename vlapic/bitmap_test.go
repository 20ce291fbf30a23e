package vlapic

import (
	"math/rand/v2"
	"testing"
)

// TestHighest: vec256.highest against a plain scan from vector 255 down,
// on the empty bitmap, each single vector, and random ones (sparse and
// dense, so that every word and both halves of each 64-bit pair are hit).
func TestHighest(t *testing.T) {
	scan := func(v *vec256) (uint8, bool) {
		for n := 255; n >= 0; n-- {
			if v.test(uint8(n)) {
				return uint8(n), true
			}
		}
		return 0, false
	}
	check := func(v vec256) {
		t.Helper()
		gn, gok := v.highest()
		wn, wok := scan(&v)
		if gn != wn || gok != wok {
			t.Fatalf("highest of %08x = %d, %v; want %d, %v", v, gn, gok, wn, wok)
		}
	}
	check(vec256{})
	for n := range 256 {
		var v vec256
		v.set(uint8(n))
		check(v)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		var v vec256
		for range r.IntN(4) {
			v.set(uint8(r.IntN(256)))
		}
		check(v)
	}
}
