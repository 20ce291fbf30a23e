package vintremap

import (
	"sync"
	"testing"
)

// TestConcurrentUse translates from several goroutines while another one
// submits invalidations and rewrites the table, for the race detector.
func TestConcurrentUse(t *testing.T) {
	r := newRig(t, Options{EIM: true})
	r.linux(true)
	for i := range 64 {
		r.setIRTE(i, irte{p: true, vector: uint8(0x40 + i), dst: uint32(i)})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				addr, data := remappableMSI(uint32((g*7+i)%80), true, 0)
				if _, err := r.u.TranslateMSI(addr, data, 0); err != nil && (g*7+i)%80 < 64 {
					t.Error(err)
					return
				}
			}
		})
	}
	// Only the driver goroutine touches guest memory's queue and IRTA.
	for range 200 {
		r.submit([2]uint64{descIEC, 0})
		r.command(gSIRTP, GSTSIRTPS, GSTSIRTPS)
		_ = r.u.Snapshot()
	}
	wg.Wait()
}
