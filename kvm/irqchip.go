// This file holds the calls of KVM's split irqchip (--lapic=kvm): its
// in-kernel LAPICs take device interrupts as MSIs, and the user-space
// IOAPIC's level-triggered pins are announced as GSI routes so that KVM
// sends their EOIs back (KVM_EXIT_IOAPIC_EOI).

package kvm

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SignalMSI injects an MSI into the in-kernel LAPICs (KVM_SIGNAL_MSI). It
// reports whether a LAPIC accepted it: KVM returns 0 when the message
// reached none that took it (the guest masked it), and -1 when no LAPIC
// matched the destination at all (kvm_irq_delivery_to_apic starts at -1
// and adds only matching vCPUs), which the ioctl hands back as EPERM:
// that is a message with no target, as on hardware, not a refusal. (The
// sandbox's seccomp filter also answers EPERM, but KVM_SIGNAL_MSI is in
// its list: sandbox.TestInstall checks every running ioctl gets through.)
func (vm *VM) SignalMSI(m MSI) (bool, error) {
	n, err := retryEINTR(func() (uintptr, error) { return ioctlPtrN(vm.fd, kvmSignalMSI, &m) })
	if errors.Is(err, unix.EPERM) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("KVM_SIGNAL_MSI: %w", err)
	}
	return n > 0, nil
}

// SetGSIRouting replaces KVM's GSI routing table (KVM_SET_GSI_ROUTING)
// with routes, at most MaxGSIRoutes of them.
func (vm *VM) SetGSIRouting(routes []IRQRoutingEntry) error {
	if len(routes) > MaxGSIRoutes {
		return fmt.Errorf("KVM_SET_GSI_ROUTING: %d routes, at most %d", len(routes), MaxGSIRoutes)
	}
	r := irqRouting{NR: uint32(len(routes))}
	copy(r.Entries[:], routes)
	_, err := retryEINTR(func() (uintptr, error) { return ioctlPtrN(vm.fd, kvmSetGSIRouting, &r) })
	return wrap("KVM_SET_GSI_ROUTING", err)
}

// LAPIC reads the vCPU's in-kernel LAPIC (KVM_GET_LAPIC).
func (c *VCPU) LAPIC() (LAPICState, error) {
	var s LAPICState
	return s, wrap("KVM_GET_LAPIC", ioctlPtr(c.fd, kvmGetLAPIC, &s))
}

// SetLAPIC loads the vCPU's in-kernel LAPIC (KVM_SET_LAPIC).
func (c *VCPU) SetLAPIC(s LAPICState) error {
	return wrap("KVM_SET_LAPIC", ioctlPtr(c.fd, kvmSetLAPIC, &s))
}

// IOAPICEOIVector is the vector of a KVM_EXIT_IOAPIC_EOI exit.
func (c *VCPU) IOAPICEOIVector() uint8 { return c.run.Exit[0] }

// errNoSplitIRQChip names what a host lacks for --lapic=kvm.
func errNoSplitIRQChip(what string) error {
	return fmt.Errorf("%w: this host's KVM lacks %s, which --lapic=kvm needs", ErrNoKVM, what)
}

// EnableSplitIRQChip gives the VM KVM's in-kernel LAPICs with the IOAPIC
// and PIC left to user space (KVM_CAP_SPLIT_IRQCHIP, pins routes reserved
// for the IOAPIC), and, where x2 asks, 32-bit x2APIC IDs in MSIs and
// routes (KVM_CAP_X2APIC_API). It must come before any vCPU is created.
func (vm *VM) EnableSplitIRQChip(pins int, x2 bool) error {
	for _, c := range []struct {
		cap  int
		name string
	}{{CapSplitIRQChip, "KVM_CAP_SPLIT_IRQCHIP"}, {CapSignalMSI, "KVM_CAP_SIGNAL_MSI"}, {CapIRQRouting, "KVM_CAP_IRQ_ROUTING"}} {
		if vm.CheckExtension(c.cap) == 0 {
			return errNoSplitIRQChip(c.name)
		}
	}
	if err := vm.EnableCap(CapSplitIRQChip, uint64(pins)); err != nil {
		return err
	}
	if !x2 {
		return nil
	}
	if vm.CheckExtension(CapX2APICAPI)&(X2APICAPIUse32BitIDs|X2APICAPIDisableBroadcastQuirk) == 0 {
		return errNoSplitIRQChip("KVM_CAP_X2APIC_API")
	}
	return vm.EnableCap(CapX2APICAPI, X2APICAPIUse32BitIDs|X2APICAPIDisableBroadcastQuirk)
}
