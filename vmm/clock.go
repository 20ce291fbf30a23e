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
