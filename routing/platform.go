// This file holds the platform's device interrupts: IOAPIC pins and MSIs,
// through the VT-d remapping unit, onto the APIC bus.

package routing

import (
	"errors"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vintremap"
	"github.com/govmm/govmm/vioapic"
	"github.com/govmm/govmm/vlapic"
)

// IOAPICSourceID is the IOAPIC's requester ID as the remapping unit sees it
// and as the DMAR table announces it (bus 0xFF, device 0, function 0: a
// platform pseudo-device, as on QEMU's q35).
const IOAPICSourceID = 0xFF00

// Observer hears what the platform did with each device interrupt: the
// measurement's side (accounting.Platform and accounting.Observer in
// govmm, adapted by vmm), which nothing here depends on. Its methods may
// be called from any vCPU or device thread at once.
type Observer interface {
	IOAPICFired()           // an IOAPIC redirection entry fired
	IOAPICLost()            // and no LAPIC accepted its interrupt
	MSI()                   // a device wrote an MSI
	Remapped()              // the interrupt was translated through an IRTE
	Delivered(logical bool) // a device interrupt went on the APIC bus, its destination named logically or physically
	Fault(reason uint8)     // the remapping unit refused it (its VT-d fault reason; 0: none given)
	// TraceDeviceMSI is the mark a device MSI carries to its LAPIC
	// (vlapic.Message.Trace): its latency is measured and the exits it
	// costs its receiver are charged to device interrupts.
	TraceDeviceMSI() vlapic.Trace
}

// Platform carries device interrupts to the APIC bus: IOAPIC pins and
// MSIs, through the VT-d remapping unit once the guest enabled it. It is
// the vioapic.Sink and vintremap.Interrupter of the VM and serves their
// MMIO pages (Register). Every method may run on any vCPU or device
// thread at once: the devices it holds guard themselves.
type Platform struct {
	apics  Delivery
	ioapic *vioapic.IOAPIC
	iommu  *vintremap.Unit // nil when the VM has no remapping unit
	obs    Observer
}

// NewPlatform returns the platform of the LAPICs apics (govmm's APIC bus,
// or KVM's LAPICs: KVMLAPICs) over guest memory mem, with a remapping unit when iommu is set (with extended interrupt
// mode, x2APIC destinations, when eim is), reporting to obs.
func NewPlatform(apics Delivery, mem *memory.Memory, obs Observer, iommu, eim bool) *Platform {
	p := &Platform{apics: apics, obs: obs}
	p.ioapic = vioapic.New(0, p)
	if iommu {
		p.iommu = vintremap.New(guestMemory{mem}, p, vintremap.Options{EIM: eim})
	}
	// Level-triggered EOIs go to the IOAPIC, which clears Remote IRR by vector.
	apics.SetEOIHandler(p.ioapic.EOI)
	return p
}

// IOAPIC is the platform's IOAPIC (a snapshot saves and restores it).
func (p *Platform) IOAPIC() *vioapic.IOAPIC { return p.ioapic }

// RemappingUnit is the platform's VT-d remapping unit, nil without one.
func (p *Platform) RemappingUnit() *vintremap.Unit { return p.iommu }

// Fire is the IOAPIC's output: decode (or translate) the entry and deliver.
func (p *Platform) Fire(pin int, rte uint64) bool {
	p.obs.IOAPICFired()
	var m vlapic.Message
	if p.iommu != nil && p.iommu.Enabled() {
		var err error
		if m, err = p.iommu.TranslateIOAPIC(rte, IOAPICSourceID); err != nil {
			p.fault(err)
			return false
		}
		if vioapic.IsRemappable(rte) {
			p.obs.Remapped()
		}
	} else {
		m = vioapic.DecodeRTE(rte)
	}
	if r, ok := p.apics.(pinRouter); ok {
		r.routePin(pin, m)
	}
	if p.deliver(m, nil) == 0 {
		p.obs.IOAPICLost()
		return false
	}
	return true
}

// deliver puts a device interrupt on the APIC bus and counts how its
// destination was named; accepted (nil: none) hears each LAPIC that took it.
func (p *Platform) deliver(m vlapic.Message, accepted func(cpu int)) int {
	p.obs.Delivered(m.DestMode == vlapic.Logical)
	return p.apics.DeliverObserved(m, accepted)
}

// SendMSI delivers a device MSI from requester sid.
func (p *Platform) SendMSI(addr uint64, data uint32, sid uint16) bool {
	return p.SendMSIAccepted(addr, data, sid, nil)
}

// SendMSIAccepted delivers a device MSI from requester sid: through the
// remapping unit when it is on (an IRTE lookup, its source-ID check, a
// fault record when refused), else as a compatibility-format message.
// accepted hears each CPU that took it (a PCI device's per-CPU counts).
func (p *Platform) SendMSIAccepted(addr uint64, data uint32, sid uint16, accepted func(cpu int)) bool {
	p.obs.MSI()
	var m vlapic.Message
	if p.iommu != nil && p.iommu.Enabled() {
		var err error
		if m, err = p.iommu.TranslateMSI(addr, data, sid); err != nil {
			p.fault(err)
			return false
		}
		if addr&(1<<4) != 0 {
			p.obs.Remapped()
		}
	} else {
		var ok bool
		if m, ok = vlapic.DecodeMSI(addr, data); !ok {
			return false // not an interrupt address: the write goes nowhere
		}
	}
	m.Trace = p.obs.TraceDeviceMSI()
	return p.deliver(m, accepted) > 0
}

// MSI is the remapping unit's own interrupts (fault events, invalidation
// waits): compatibility format, never remapped.
func (p *Platform) MSI(addr uint64, data uint32) {
	if m, ok := vlapic.DecodeMSI(addr, data); ok {
		p.apics.Deliver(m)
	}
}

func (p *Platform) fault(err error) {
	var f vintremap.Fault
	if errors.As(err, &f) {
		p.obs.Fault(f.Reason)
		return
	}
	p.obs.Fault(0)
}

// SetLine drives IOAPIC input line n (pc-testdev, devices).
func (p *Platform) SetLine(n int, level bool) { p.ioapic.SetLine(n, level) }

// Register claims the IOAPIC and remapping-unit register pages on b.
func (p *Platform) Register(b *exitbus.Bus) error {
	err := b.Register(exitbus.Range{Space: exitbus.MMIO, Base: vioapic.Base, Len: 0x1000, Name: "IOAPIC",
		Cause: exitbus.ByAccess(ioapicCause), Handler: page(p.ioapic.ReadMMIO, p.ioapic.WriteMMIO)})
	if err != nil || p.iommu == nil {
		return err
	}
	return b.Register(exitbus.Range{Space: exitbus.MMIO, Base: vintremap.Base, Len: 0x1000, Name: "VT-d remapping unit",
		Cause:   exitbus.ReadWrite(exitcause.MMIOIOMMURead, exitcause.MMIOIOMMUWrite),
		Handler: page(p.iommu.ReadMMIO, p.iommu.WriteMMIO)})
}

// page serves a register page with its read and write methods.
func page(read, write func(off uint64, data []byte)) exitbus.Handler {
	return exitbus.HandlerFunc(func(a *exitbus.Access) error {
		if a.Write {
			write(a.Off, a.Data)
		} else {
			read(a.Off, a.Data)
		}
		return nil
	})
}

func ioapicCause(off uint64, write bool) exitcause.Cause {
	switch {
	case off == 0x00 && write:
		return exitcause.MMIOIOAPICSelWrite
	case off == 0x00:
		return exitcause.MMIOIOAPICSelRead
	case off == 0x10 && write:
		return exitcause.MMIOIOAPICWinWrite
	case off == 0x10:
		return exitcause.MMIOIOAPICWinRead
	case off == 0x40 && write:
		return exitcause.MMIOIOAPICEOIWrite
	}
	return exitcause.MMIOIOAPICOther
}

// guestMemory is guest RAM as the remapping unit reads and writes it (the
// IRT, the invalidation queue, wait-descriptor status).
type guestMemory struct{ m *memory.Memory }

func (g guestMemory) ReadGPA(gpa uint64, b []byte) error {
	s, err := g.m.Slice(gpa, uint64(len(b)))
	if err != nil {
		return err
	}
	copy(b, s)
	return nil
}

func (g guestMemory) WriteGPA(gpa uint64, b []byte) error { return g.m.Write(gpa, b) }
