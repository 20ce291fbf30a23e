// Package tscclock is the host TSC as a clock of nanoseconds, read with
// RDTSC: the accounting's latency stamps and the vCPUs' halt timing.
//
// Why not Go's clock: where the kernel's clock source is not the TSC (the
// nested hosts' L1 kernels judge their TSC unstable and read the HPET)
// Go's clock read is a system call and an HPET read, and an IPI's four
// stamps were a measurable share of its round trip that no APIC has to
// pay; a latency stamp or a halt's length needs no more than a steady
// TSC. A TSC that steps back between CPUs makes a latency negative, which
// counts as 0, never a wrong count.
//
// Why a concrete type: its users hold it by value and call it directly
// (inlined), where a vlapic.Clock would cost each read its interface's
// itab, the clock's struct and its code, three pages an exit touches in
// the nested AMD-V host (vcpu/loop.go says why pages count). They take a
// vlapic.Clock and use it directly when it is one of these.
package tscclock

import "github.com/govmm/govmm/kvm"

// Clock is nanoseconds since New, from the host TSC.
type Clock struct {
	start     uint64
	nsPerTick float64
}

// New returns a Clock for a TSC of tscHz, starting now.
func New(tscHz uint64) *Clock {
	return &Clock{start: kvm.RDTSC(), nsPerTick: 1e9 / float64(tscHz)}
}

// Now is the nanoseconds since New, 0 at the least.
func (c *Clock) Now() int64 {
	return max(int64(float64(int64(kvm.RDTSC()-c.start))*c.nsPerTick), 0)
}

// TSC is the host's TSC.
func (c *Clock) TSC() uint64 { return kvm.RDTSC() }
