package vmm

import (
	"fmt"
	"time"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/routing"
)

// hostClock is the LAPIC timers' clock: monotonic time since the VM was
// made, and a model of the guest TSC, the host TSC plus the offset KVM
// gave the vCPUs (measured once; govmm sets no TSC scaling or per-vCPU
// offset). The model is right only where KVM keeps that offset: on a host
// whose TSC it finds unstable it moves it at every vcpu_load, so a TSC
// deadline is judged against the vCPU's TSC read from KVM at the write
// (routing's TSC_DEADLINE handler), not against this.
type hostClock struct {
	start     time.Time
	tscOffset uint64
	tscHz     uint64
}

func newHostClock(c *kvm.VCPU) (*hostClock, error) {
	khz, err := c.TSCKHz()
	if err != nil || khz == 0 {
		return nil, fmt.Errorf("cannot read the guest TSC frequency: %v", err)
	}
	before := kvm.RDTSC()
	guest, err := c.GetMSR(routing.MSRTSC)
	if err != nil {
		return nil, err
	}
	after := kvm.RDTSC()
	return &hostClock{start: time.Now(), tscOffset: guest - (before/2 + after/2), tscHz: uint64(khz) * 1000}, nil
}

func (c *hostClock) Now() int64  { return int64(time.Since(c.start)) }
func (c *hostClock) TSC() uint64 { return kvm.RDTSC() + c.tscOffset }

// stampClock is the accounting's clock for interrupt latencies (the
// Observer's stamps at each send and stage, four reads per IPI): the host
// TSC in nanoseconds since the VM was made, read with RDTSC. The LAPIC
// timers keep hostClock, the kernel's monotonic clock. Why not that one
// here: where the kernel's clock source is not the TSC (the nested hosts'
// L1 kernels judge their TSC unstable and read the HPET) Go's clock read
// is a system call and an HPET read, and four of them per IPI were a
// measurable share of an IPI's round trip that no APIC has to pay; a
// latency stamp needs no more than a steady TSC. A TSC that steps back
// between CPUs makes a latency negative, which counts as 0
// (Histogram.Observe), never a wrong IPI count.
type stampClock struct {
	start     uint64
	nsPerTick float64
}

func newStampClock(tscHz uint64) *stampClock {
	return &stampClock{start: kvm.RDTSC(), nsPerTick: 1e9 / float64(tscHz)}
}

// Now is the nanoseconds since the VM was made, 0 at the least.
func (c *stampClock) Now() int64 {
	return max(int64(float64(int64(kvm.RDTSC()-c.start))*c.nsPerTick), 0)
}

// TSC is the host's TSC (the accounting reads none).
func (c *stampClock) TSC() uint64 { return kvm.RDTSC() }
