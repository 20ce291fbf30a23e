// Package vioapic is govmm's I/O APIC: a pure state machine, with no KVM in
// it, for one 24-pin IOAPIC.
//
// Input line levels (SetLine), register accesses (ReadMMIO, WriteMMIO) and
// LAPIC EOIs of level-triggered vectors (EOI) go in; what a pin fires comes
// out through the Sink as the raw 64-bit redirection entry, so that the
// platform can either decode it (DecodeRTE) or hand a remappable-format entry
// to interrupt remapping.
//
// Model: Intel 82093AA I/O APIC datasheet, with Linux's arch/x86/kvm/ioapic.c
// as the reference for what the datasheet leaves open, and QEMU's
// hw/intc/ioapic.c for the version 0x20 EOI register, which KVM (version
// 0x11) lacks. Where they differ we follow KVM:
//   - Reads of unknown indirect registers return all ones; writes to them
//     and to read-only registers and bits are ignored.
//   - The page decodes offset bits 7:0 only (offset 0x100 aliases 0x00).
//     IOREGSEL (0x00) and IOWIN (0x10) take 1, 2, 4 and 8-byte accesses: a
//     read returns the low bytes of the 32-bit register (8 bytes zero-
//     extend it), a write uses the low 32 bits of what is written. Other
//     sizes, and other offsets, read zeros and ignore writes.
//   - Every redirection-entry bit is writable except Remote IRR (14) and
//     Delivery Status (12), so remappable-format entries survive intact.
//     Setting an entry to edge clears Remote IRR (Linux and Xen use this as
//     an EOI on IOAPICs without an EOI register).
//   - Any write to a level entry whose pin is asserted services it: it fires
//     if unmasked and Remote IRR is clear (so an unmask fires).
//   - A level assert is re-tried on every SetLine(pin, asserted) call: it
//     fires if unmasked and Remote IRR is clear, and is counted as
//     coalesced if Remote IRR is set.
//   - Remote IRR is set only when the Sink reports delivery; a level fire
//     that nobody accepted leaves it clear and is not retried until the next
//     assert, EOI or entry write.
//   - Interrupt storms: after StormLimit successive EOIs that each re-fire
//     the same still-asserted level pin at once, the next re-fire is put off
//     by StormDelay (KVM: 10000 and 10 ms), so a guest that EOIs without
//     quieting the device still makes slow progress and the VMM keeps
//     running. Unlike KVM, further EOIs of that pin do not re-fire it
//     before the delay is over, so stray EOIs cannot bypass the guard.
//
// Left out: Delivery Status always reads 0 (delivery is instantaneous);
// polarity changes by an entry write do not make edges (an edge is a change
// of the asserted level caused by SetLine); the arbitration ID is not
// rotated (it reads as the ID, as on KVM); the RTC coalescing tracking and
// directed EOI of KVM; the base address relocation of the chipset.
//
// Concurrency: see the IOAPIC type.
package vioapic

import (
	"time"

	"github.com/govmm/govmm/vlapic"
)

// Base is the default physical address of the IOAPIC page (4 KiB).
const Base = 0xFEC00000

// Pins is the number of input pins and redirection entries.
const Pins = 24

// Version is the version register: maximum redirection entry 23 in bits
// 23:16, version 0x20 (has the EOI register) in bits 7:0.
const Version = (Pins-1)<<16 | 0x20

// Offsets into the page.
const (
	RegSel = 0x00 // IOREGSEL: index of the register IOWIN reaches
	RegWin = 0x10 // IOWIN: the selected register
	RegEOI = 0x40 // EOI: a written vector acts as EOI(vector)
)

// Indirect register indices (IOREGSEL values).
const (
	IndexID      = 0x00
	IndexVersion = 0x01
	IndexArb     = 0x02
	IndexRTE     = 0x10 // + 2*pin: low dword; + 2*pin + 1: high dword
)

// Redirection entry bits.
const (
	RTEVector         = 0xFF
	RTEDeliveryStatus = 1 << 12 // read-only
	RTEActiveLow      = 1 << 13
	RTERemoteIRR      = 1 << 14 // read-only
	RTELevel          = 1 << 15
	RTEMasked         = 1 << 16
	RTERemappable     = 1 << 48 // VT-d interrupt format bit
)

// Storm guard: after StormLimit successive immediate re-fires of a pin by
// EOI, the next one waits StormDelay.
const (
	StormLimit = 10000
	StormDelay = 10 * time.Millisecond
)

// Sink receives what a pin fires: the raw 64-bit redirection entry and the
// pin. It is called with no IOAPIC lock held and may call back into the
// IOAPIC. It returns whether at least one LAPIC accepted the interrupt
// (false: no target, or a remapping fault).
type Sink interface {
	Fire(pin int, rte uint64) bool
}

// DecodeRTE turns a compatibility-format redirection entry into an APIC bus
// message: vector 7:0, delivery mode 10:8, destination mode 11, trigger 15,
// destination 63:56. Polarity, mask and Remote IRR are the IOAPIC's own
// business. Assert is always true: the LAPIC drops a level-triggered Fixed
// message without it.
func DecodeRTE(rte uint64) vlapic.Message {
	return vlapic.Message{
		Vector:   uint8(rte),
		Delivery: vlapic.DeliveryMode(rte >> 8 & 7),
		DestMode: vlapic.DestMode(rte >> 11 & 1),
		Trigger:  vlapic.Trigger(rte >> 15 & 1),
		Assert:   true,
		Dest:     uint32(rte >> 56),
		Source:   -1,
	}
}

// IsRemappable reports whether rte is in the VT-d remappable format (bit 48
// set), which only an interrupt-remapping unit can translate.
func IsRemappable(rte uint64) bool { return rte&RTERemappable != 0 }
