package vmm

import (
	"sync/atomic"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/pveoi"
	"github.com/govmm/govmm/pvipi"
	"github.com/govmm/govmm/pvsyscall"
	"github.com/govmm/govmm/routing"
	"github.com/govmm/govmm/vlapic"
)

// pvUnit is a paravirtual feature: what it shows in the hypervisor CPUID
// leaves and the ranges it claims on the exit bus (its MSRs reach the MSR
// filter from there). Its per-vCPU state is its own.
type pvUnit interface {
	CPUID(*hvcpuid.Leaves)
	Register(*exitbus.Bus) error
}

// pvUnits are the VM's paravirtual features, built from its configuration
// and the objects they serve (none for msrBus, which only registers them).
type pvUnits struct {
	eoi      *pveoi.Unit // nil under --lapic=kvm
	ipi      *pvipi.Unit
	doorbell *pvsyscall.Unit
	// kvmEOI: KVM's LAPIC serves PV EOI (--lapic=kvm --pv-eoi): the same
	// ABI, announced in the same CPUID bit, its MSR left to KVM.
	kvmEOI bool
	// kvmIPI: KVM's LAPIC serves PV send-IPI (--lapic=kvm --pv-ipi): its
	// own hypercall (KVM_HC_SEND_IPI, kvm_pv_send_ipi), announced in
	// KVM's CPUID leaf; govmm's MSR is not offered.
	kvmIPI bool
	// kvmLAPIC: the LAPIC is KVM's (hvcpuid.FeatureKVMLAPIC).
	kvmLAPIC bool
}

func (vm *VM) newPVUnits() pvUnits {
	n := vm.cfg.CPUs
	if vm.cfg.LAPIC == LAPICKVM {
		return pvUnits{ipi: pvipi.New(false, vm.mem, nil, vm.obs), doorbell: pvsyscall.New(vm.doorbell, n),
			kvmEOI: vm.cfg.PVEOI, kvmIPI: vm.cfg.PVIPI, kvmLAPIC: true}
	}
	lapics := make([]pveoi.LAPIC, n)
	eois := make([]*atomic.Uint64, n)
	for i := range n {
		lapics[i], eois[i] = vm.apics.LAPIC(i), &vm.acct.CPUs[i].PVEOIs
	}
	return pvUnits{
		eoi:      pveoi.New(vm.cfg.PVEOI, vm.mem, lapics, eois),
		ipi:      pvipi.New(vm.cfg.PVIPI, vm.mem, vm.apics, vm.obs),
		doorbell: pvsyscall.New(vm.doorbell, n),
	}
}

func (u pvUnits) list() []pvUnit {
	if u.eoi == nil {
		return []pvUnit{u.ipi, u.doorbell}
	}
	return []pvUnit{u.eoi, u.ipi, u.doorbell}
}

// leaves is what the units show in the hypervisor CPUID leaves.
func (u pvUnits) leaves() hvcpuid.Leaves {
	var l hvcpuid.Leaves
	if u.kvmLAPIC {
		l.Features |= hvcpuid.FeatureKVMLAPIC
	}
	if u.kvmEOI {
		l.KVMFeatures |= pveoi.KVMFeatureEOI
	}
	if u.kvmIPI {
		l.KVMFeatures |= hvcpuid.KVMFeaturePVSendIPI
	}
	for _, p := range u.list() {
		p.CPUID(&l)
	}
	return l
}

func (u pvUnits) register(b *exitbus.Bus) error {
	for _, p := range u.list() {
		if err := p.Register(b); err != nil {
			return err
		}
	}
	return nil
}

// msrFilter is the MSR filter: every MSR range on the bus registered for
// it, each denied to KVM so that its accesses exit to govmm.
func msrFilter(b *exitbus.Bus) []kvm.MSRRange {
	var out []kvm.MSRRange
	for _, r := range b.FilteredMSRs() {
		out = append(out, kvm.MSRRange{Base: uint32(r.Base), Allow: make([]bool, r.Len), Read: true, Write: true})
	}
	return out
}

// claimedMSRs are the MSRs govmm's MSR filter claims, as the host probe
// checks that they reach govmm: the filtered MSR ranges of a VM's bus
// (built without a VM behind it), but TSC deadline, which the probe
// measures on its own (hostprobe.Answers.TSCDeadlineReaches).
func claimedMSRs() []hostprobe.Claimed {
	var out []hostprobe.Claimed
	for _, r := range msrBus().FilteredMSRs() {
		for i := range r.Len {
			if idx := uint32(r.Base + i); idx != vlapic.MSRTSCDeadline {
				out = append(out, hostprobe.Claimed{Name: r.Name, Index: idx})
			}
		}
	}
	return out
}

// msrBus is the MSR part of every VM's exit bus, with no VM behind its
// handlers: the LAPICs' MSRs and the PV units'.
func msrBus() *exitbus.Bus {
	var b exitbus.Bus
	vm := &VM{}
	if err := routing.RegisterLAPICs(&b, nil); err != nil {
		panic(err)
	}
	if err := vm.newPVUnits().register(&b); err != nil {
		panic(err)
	}
	return &b
}

// PVFlag is an on/off switch of the VM's interrupt paths on the command
// line: a PV unit's (its name and help are the unit package's) or the
// AVIC-style delivery path's, and the Config field it sets. Every command
// that builds a VM declares them all from PVFlags, so a new PV unit adds
// its row here and no flag anywhere else.
type PVFlag struct {
	Name, Help string
	field      func(*Config) *bool
}

// Set turns the switch on or off in c.
func (f PVFlag) Set(c *Config, on bool) { *f.field(c) = on }

// On reads the switch from c.
func (f PVFlag) On(c *Config) bool { return *f.field(c) }

// AVICFlag is the AVIC-style delivery switch (Config.AVIC).
const AVICFlag = "avic"

var pvFlags = []PVFlag{
	{pvipi.Flag, pvipi.FlagHelp, func(c *Config) *bool { return &c.PVIPI }},
	{pveoi.Flag, pveoi.FlagHelp, func(c *Config) *bool { return &c.PVEOI }},
	{AVICFlag, "AVIC-style delivery: edge IPIs posted to the target's IRR backing page without its lock (implies --" + pveoi.Flag + ")",
		func(c *Config) *bool { return &c.AVIC }},
}

// PVFlags lists the switches, in the order they are declared.
func PVFlags() []PVFlag { return pvFlags }
