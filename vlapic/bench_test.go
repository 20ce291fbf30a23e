// Benchmarks of the IPI path: x2APIC ICR write -> delivery -> receiver
// acknowledge and EOI, for unicast, shorthand multicast and cluster sweeps,
// each on the plain and the AVIC delivery path (sub-benchmarks .../plain
// and .../avic).

package vlapic

import (
	"fmt"
	"sync"
	"testing"
)

// benchBus is n software-enabled x2APIC LAPICs with a counting sink.
func benchBus(b *testing.B, n int, avic bool) *Bus {
	bus := NewBus(n, &fakeClock{}, &countSink{}, Options{X2APIC: true, AVIC: avic})
	for i := range n {
		a := bus.LAPIC(i)
		must(b, a.SetBase(a.Base()|BaseEXTD))
		wr(b, a, RegSVR, 0x1FF)
	}
	return bus
}

var benchSizes = []int{1, 16, 256, 1024}

// benchPaths are the delivery paths every benchmark compares.
var benchPaths = []struct {
	name string
	avic bool
}{{"plain", false}, {"avic", true}}

// runPaths runs fn as one sub-benchmark per delivery path, named prefix/path.
func runPaths(b *testing.B, prefix string, fn func(b *testing.B, avic bool)) {
	for _, p := range benchPaths {
		b.Run(prefix+"/"+p.name, func(b *testing.B) { fn(b, p.avic) })
	}
}

// ackEOI is the receiver's half: INTA then EOI, keeping IRR drained.
func ackEOI(a *LAPIC) {
	if _, ok := a.Acknowledge(); ok {
		a.EOI()
	}
}

// BenchmarkICRUnicast is one x2APIC ICR write (physical, fixed) from CPU 0
// to each CPU in turn, plus the receiver's acknowledge and EOI.
func BenchmarkICRUnicast(b *testing.B) {
	for _, n := range benchSizes {
		runPaths(b, fmt.Sprintf("cpus=%d", n), func(b *testing.B, avic bool) {
			bus := benchBus(b, n, avic)
			src := bus.LAPIC(0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				dst := i % n
				i++
				if _, err := src.WriteMSR(msr(RegICR), uint64(dst)<<32|0x40); err != nil {
					b.Fatal(err)
				}
				ackEOI(bus.LAPIC(dst))
			}
		})
	}
}

// BenchmarkICRMulticastAll sends to every CPU per op: one all-including-self
// ICR, or one logical-cluster ICR per 16 CPUs (as Linux's x2APIC cluster
// mode does); then every receiver acknowledges and EOIs.
func BenchmarkICRMulticastAll(b *testing.B) {
	for _, n := range benchSizes {
		runPaths(b, fmt.Sprintf("shorthand/cpus=%d", n), func(b *testing.B, avic bool) {
			bus := benchBus(b, n, avic)
			src := bus.LAPIC(0)
			icr := uint64(AllIncludingSelf)<<18 | 0x40
			b.ReportAllocs()
			for b.Loop() {
				if eff, err := src.WriteMSR(msr(RegICR), icr); err != nil || eff.Targets != n {
					b.Fatal(eff, err)
				}
				for i := range n {
					ackEOI(bus.LAPIC(i))
				}
			}
		})
		runPaths(b, fmt.Sprintf("cluster/cpus=%d", n), func(b *testing.B, avic bool) {
			bus := benchBus(b, n, avic)
			src := bus.LAPIC(0)
			b.ReportAllocs()
			for b.Loop() {
				for c := 0; c*16 < n; c++ {
					mask := uint64(1)<<min(16, n-c*16) - 1
					icr := (uint64(c)<<16|mask)<<32 | 1<<11 | 0x40
					if _, err := src.WriteMSR(msr(RegICR), icr); err != nil {
						b.Fatal(err)
					}
				}
				for i := range n {
					ackEOI(bus.LAPIC(i))
				}
			}
		})
	}
}

// BenchmarkDeliverUnicast is Bus.Deliver alone (a device MSI), no drain
// needed: the same IRR bit is set again.
func BenchmarkDeliverUnicast(b *testing.B) {
	runPaths(b, "cpus=1024", func(b *testing.B, avic bool) {
		bus := benchBus(b, 1024, avic)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			bus.Deliver(fixed(0x40, Physical, uint32(i%1024)))
			i++
		}
	})
}

// BenchmarkICRToBusyTarget is the sender's side of a unicast IPI while the
// target's vCPU thread keeps taking its own LAPIC's lock (a goroutine
// acknowledging and EOIing in a loop, as a vCPU looking for interrupts
// does): on the plain path the sender contends for that lock, on the AVIC
// path it posts without it.
func BenchmarkICRToBusyTarget(b *testing.B) {
	runPaths(b, "cpus=16", func(b *testing.B, avic bool) {
		bus := benchBus(b, 16, avic)
		src, dst := bus.LAPIC(0), bus.LAPIC(1)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ackEOI(dst)
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := src.WriteMSR(msr(RegICR), 1<<32|0x40); err != nil {
				b.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
	})
}
