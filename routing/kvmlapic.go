// This file holds KVMLAPICs: the platform's device interrupts delivered
// to KVM's in-kernel LAPICs (--lapic=kvm, KVM's split irqchip) instead of
// govmm's APIC bus. The IOAPIC and the remapping unit stay govmm's; what
// they decide goes in as an MSI (KVM_SIGNAL_MSI), as QEMU's split
// irqchip sends its user-space IOAPIC's and IOMMU's interrupts.

package routing

import (
	"sync"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vioapic"
	"github.com/govmm/govmm/vlapic"
)

// Delivery is where the platform's device interrupts go once decoded or
// translated: govmm's APIC bus (*vlapic.Bus) or KVM's LAPICs (KVMLAPICs).
// DeliverObserved returns how many LAPICs accepted the message, and
// accepted (nil: none) hears each of them where that is known;
// SetEOIHandler gives it the IOAPIC's EOI, for the level-triggered
// vectors it delivered.
type Delivery interface {
	DeliverObserved(m vlapic.Message, accepted func(cpu int)) int
	Deliver(m vlapic.Message) int
	SetEOIHandler(h func(vector uint8))
}

var _ Delivery = (*vlapic.Bus)(nil)

// pinRouter is a Delivery that must know which IOAPIC pin a message came
// from before it is delivered (KVMLAPICs).
type pinRouter interface {
	routePin(pin int, m vlapic.Message)
}

// KVMIRQ is the VM's door into KVM's in-kernel LAPICs (a *kvm.VM).
type KVMIRQ interface {
	SignalMSI(kvm.MSI) (bool, error)
	SetGSIRouting([]kvm.IRQRoutingEntry) error
}

var _ KVMIRQ = (*kvm.VM)(nil)

// KVMLAPICs delivers device interrupts to KVM's in-kernel LAPICs.
//
// KVM sends a vector's EOI back to user space (KVM_EXIT_IOAPIC_EOI) only
// for the vectors its GSI routing table shows as the level-triggered
// output of an IOAPIC pin (kvm_scan_ioapic_routes in arch/x86/kvm/irq_comm.c,
// over the first pins routes that KVM_CAP_SPLIT_IRQCHIP reserved): so each
// pin's last message is kept there as an MSI route, set again when a fire
// finds it changed (the guest reprogrammed the entry, or the remapping
// unit's IRTE). KVM rescans before the next entry of every vCPU
// (KVM_REQ_SCAN_IOAPIC), which precedes the injection of the new message.
//
// Concurrency: any vCPU or device thread may deliver at once; mu guards
// routes. EOI is set before the VM runs and read-only after.
type KVMLAPICs struct {
	vm   KVMIRQ
	cpus int // vCPUs, whose APIC IDs are their indexes
	// Fail hears an ioctl KVM refused (the interrupt is then not
	// delivered): the VM reports it, never drops it silently.
	Fail func(error)
	// EOI is the IOAPIC's EOI (SetEOIHandler), which the vCPU loops call
	// for each KVM_EXIT_IOAPIC_EOI.
	EOI func(vector uint8)

	mu     sync.Mutex
	routes [vioapic.Pins]kvm.IRQRoutingEntry
	set    uint32 // pins whose route KVM has
}

// NewKVMLAPICs returns the delivery into the in-kernel LAPICs of vm's cpus
// vCPUs; fail hears each refused ioctl.
func NewKVMLAPICs(vm KVMIRQ, cpus int, fail func(error)) *KVMLAPICs {
	return &KVMLAPICs{vm: vm, cpus: cpus, Fail: fail}
}

// EncodeMSI is m as the MSI KVM takes: compatibility format
// (vlapic.EncodeCompatMSI), destination bits 31:8 in address_hi, as KVM
// reads them with KVM_X2APIC_API_USE_32BIT_IDS (MSI_ADDR_EXT_DEST_ID in
// kvm_set_msi_irq).
func EncodeMSI(m vlapic.Message) kvm.MSI {
	lo, data := vlapic.EncodeCompatMSI(m)
	return kvm.MSI{AddressLo: lo, AddressHi: m.Dest &^ 0xFF, Data: data}
}

// DeliverObserved signals m to KVM; the count is 1 when any LAPIC took it.
// KVM does not say which: accepted hears the one CPU a fixed interrupt
// names physically (govmm's APIC IDs are vCPU indexes), and nothing of a
// logical or lowest-priority one, whose receiver only KVM knows.
func (k *KVMLAPICs) DeliverObserved(m vlapic.Message, accepted func(cpu int)) int {
	if m.Trigger == vlapic.Level && !m.Assert && m.Delivery == vlapic.INIT {
		return 0 // an INIT level de-assert, which LAPICs ignore
	}
	ok, err := k.vm.SignalMSI(EncodeMSI(m))
	if err != nil {
		k.fail(err)
		return 0
	}
	if !ok {
		return 0
	}
	if accepted != nil && m.DestMode == vlapic.Physical && m.Delivery == vlapic.Fixed && m.Dest < uint32(k.cpus) {
		accepted(int(m.Dest))
	}
	return 1
}

// Deliver is DeliverObserved without an observer.
func (k *KVMLAPICs) Deliver(m vlapic.Message) int { return k.DeliverObserved(m, nil) }

// SetEOIHandler sets the IOAPIC's EOI, which the vCPU loops call (EOI).
func (k *KVMLAPICs) SetEOIHandler(h func(vector uint8)) { k.EOI = h }

// routePin keeps pin's route in KVM's table equal to m, the message its
// fire is about to deliver.
func (k *KVMLAPICs) routePin(pin int, m vlapic.Message) {
	if pin < 0 || pin >= vioapic.Pins {
		return
	}
	msi := EncodeMSI(m)
	e := kvm.IRQRoutingEntry{GSI: uint32(pin), Type: kvm.IRQRoutingMSI, AddressLo: msi.AddressLo, AddressHi: msi.AddressHi, Data: msi.Data}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.set&(1<<pin) != 0 && k.routes[pin] == e || k.set&(1<<pin) == 0 && m.Trigger != vlapic.Level {
		return // unchanged, or an edge pin KVM has never needed to know
	}
	k.routes[pin], k.set = e, k.set|1<<pin
	var table []kvm.IRQRoutingEntry
	for i := range vioapic.Pins {
		if k.set&(1<<i) != 0 {
			table = append(table, k.routes[i])
		}
	}
	if err := k.vm.SetGSIRouting(table); err != nil {
		k.set &^= 1 << pin
		k.fail(err)
	}
}

func (k *KVMLAPICs) fail(err error) {
	if k.Fail != nil {
		k.Fail(err)
	}
}
