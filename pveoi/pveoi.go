// Package pveoi is PV EOI with KVM's guest ABI, served entirely by govmm:
// CPUID 0x40000001 EAX bit 6 (KVM_FEATURE_PV_EOI), MSR 0x4B564D04
// (MSR_KVM_PV_EOI_EN) = guest-physical address (4-byte aligned) | 1. When
// govmm injects an edge vector with nothing else requested, it sets bit 0
// of the guest's word; the guest's EOI then only clears that bit, without
// an exit, and govmm completes the EOI in the LAPIC at its next look (each
// entry, or a halt). Stock Linux uses it unmodified (arch/x86/kernel/kvm.c).
//
// The unit claims its MSR on the exit bus (filtered: KVM knows the MSR),
// sets its CPUID bit, and keeps per-vCPU state (CPU) that the vCPU loop
// drives through vcpu.PVEOI.
package pveoi

import (
	"fmt"
	"sync/atomic"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/vlapic"
)

// ABI constants.
const (
	MSR           = 0x4B564D04 // MSR_KVM_PV_EOI_EN
	KVMFeatureEOI = 1 << 6     // KVM_FEATURE_PV_EOI, CPUID 0x40000001 EAX
)

// Flag and FlagHelp are the unit's on/off switch on govmm's command line
// (vmm.PVFlags lists every unit's).
const (
	Flag     = "pv-eoi"
	FlagHelp = "advertise KVM's PV EOI, served by govmm: the guest's edge EOIs cost no exit"
)

// Memory is guest RAM, where the guest's PV EOI word is.
type Memory interface {
	Slice(gpa, n uint64) ([]byte, error)
}

// LAPIC is the vCPU's local APIC as PV EOI completes an EOI in it.
type LAPIC interface{ EOI() }

// Unit is PV EOI for a VM. Its MSR is claimed whether or not the feature
// is offered: without it the MSR answers #GP (as it is charged the same).
type Unit struct {
	enabled bool
	cpus    []CPU
}

// New returns the unit for len(lapics) vCPUs; enabled offers the feature.
// eois[i] counts the EOIs vCPU i's guest did through PV EOI.
func New(enabled bool, mem Memory, lapics []LAPIC, eois []*atomic.Uint64) *Unit {
	u := &Unit{enabled: enabled, cpus: make([]CPU, len(lapics))}
	for i := range u.cpus {
		u.cpus[i] = CPU{enabled: enabled, mem: mem, lapic: lapics[i], eois: eois[i]}
	}
	return u
}

// CPU returns vCPU i's state, the vcpu.PVEOI its loop calls.
func (u *Unit) CPU(i int) *CPU { return &u.cpus[i] }

// CPUID sets the feature bit when offered.
func (u *Unit) CPUID(l *hvcpuid.Leaves) {
	if u.enabled {
		l.KVMFeatures |= KVMFeatureEOI
	}
}

// Register claims the MSR.
func (u *Unit) Register(b *exitbus.Bus) error {
	return b.Register(exitbus.Range{Space: exitbus.MSR, Base: MSR, Len: 1, Name: "KVM_PV_EOI", PerCPU: true, Filter: true,
		Cause:   exitbus.ReadWrite(exitcause.MSRPVEOIRead, exitcause.MSRPVEOIWrite),
		Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error { return u.cpus[a.CPU].access(a) })})
}

// CPU is one vCPU's PV EOI state. It belongs to that vCPU's thread; only
// the guest's word is shared (with the guest), and accessed atomically.
type CPU struct {
	enabled bool // PV EOI offered to the guest
	mem     Memory
	lapic   LAPIC
	eois    *atomic.Uint64

	addr    uint64 // guest-physical address of its PV EOI word; 0: off
	msr     uint64 // what the guest last wrote to MSR_KVM_PV_EOI_EN
	pending bool   // the guest's bit is set for the vector in service
}

func (c *CPU) access(a *exitbus.Access) error {
	switch {
	case !c.enabled:
		return vlapic.ErrGP
	case a.Write && !c.write(a.Value):
		return vlapic.ErrGP
	case !a.Write:
		a.Value = c.msr
	}
	return nil
}

// word returns the guest's PV EOI word, or nil when PV EOI is off.
func (c *CPU) word() *uint32 {
	if c.addr == 0 || c.mem == nil {
		return nil
	}
	b, err := c.mem.Slice(c.addr, 4)
	if err != nil {
		return nil
	}
	return wordAt(b)
}

// write handles a WRMSR of MSR_KVM_PV_EOI_EN; false means #GP.
func (c *CPU) write(val uint64) bool {
	if !c.enabled {
		return false
	}
	addr := val &^ 1
	if val&1 == 0 {
		c.Complete()
		c.addr, c.msr = 0, val
		return true
	}
	if addr&3 != 0 || addr == 0 {
		return false
	}
	if _, err := c.mem.Slice(addr, 4); err != nil {
		return false
	}
	c.Complete()
	c.addr, c.msr = addr, val
	return true
}

// Sync completes a PV EOI the guest has done (cleared its bit).
func (c *CPU) Sync() {
	if !c.pending {
		return
	}
	w := c.word()
	if w == nil || atomic.LoadUint32(w)&1 == 0 {
		c.pending = false
		c.lapic.EOI()
		c.eois.Add(1)
	}
}

// Complete takes the PV EOI back before something else is injected: if
// the guest already cleared its bit the EOI is done now, otherwise the bit
// is cleared and the guest's EOI will be a real one.
func (c *CPU) Complete() {
	if !c.pending {
		return
	}
	c.pending = false
	w := c.word()
	if w == nil || atomic.AndUint32(w, ^uint32(1))&1 == 0 {
		c.lapic.EOI()
		c.eois.Add(1)
	}
}

// Retract clears the guest's bit for a vector whose injection was
// withdrawn: it was never in service in the guest.
func (c *CPU) Retract() {
	if !c.pending {
		return
	}
	c.pending = false
	if w := c.word(); w != nil {
		atomic.AndUint32(w, ^uint32(1))
	}
}

// Offer sets the guest's bit for the vector just injected.
func (c *CPU) Offer() {
	if w := c.word(); w != nil {
		atomic.OrUint32(w, 1)
		c.pending = true
	}
}

// Pending says whether an offer stands: the guest may yet EOI through its
// word, which only Sync sees.
func (c *CPU) Pending() bool { return c.pending }

// MSR is MSR_KVM_PV_EOI_EN as the guest last wrote it.
func (c *CPU) MSR() uint64 { return c.msr }

// Restore makes the guest's MSR_KVM_PV_EOI_EN msr again, with nothing
// pending (a snapshot saves after Complete). A value whose write would
// have been a #GP is refused.
func (c *CPU) Restore(msr uint64) error {
	c.addr, c.msr, c.pending = 0, 0, false
	if msr != 0 && !c.write(msr) {
		return fmt.Errorf("PV EOI's MSR %#x: the guest could not have written it (PV EOI off, or no RAM at its address)", msr)
	}
	return nil
}

// Reset is INIT: PV EOI off and nothing pending (the guest's word is left
// as it is).
func (c *CPU) Reset() { c.addr, c.msr, c.pending = 0, 0, false }
