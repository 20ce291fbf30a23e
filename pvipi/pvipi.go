// Package pvipi is govmm's paravirtual send-IPI channel: one exit delivers
// one vector to any set of up to 4096 APIC IDs.
//
// KVM's own PV IPI (KVM_HC_SEND_IPI) is a vmcall answered inside KVM, which
// a VMM with a user-space APIC cannot use, and vmcall hangs on emulating
// hosts (docs/hosts.md). govmm's trap is a WRMSR to an MSR KVM does not know, so
// it always reaches user space; the arguments travel in registers KVM hands
// over on every exit (KVM_CAP_SYNC_REGS), the destination set in guest
// memory, so the width is not limited by registers.
//
// ABI (version 1):
//
//	CPUID 0x40000100: govmm's signature leaf (package hvcpuid)
//	CPUID 0x40000101: EAX bit 0 = PV send-IPI available
//
//	WRMSR 0x4D564F50 (MSRSendIPI) with
//	  EAX[7:0]   vector
//	  EAX[10:8]  delivery mode: 0 fixed or 4 NMI; other bits of EAX are reserved (0)
//	  EDX        number n of 64-bit bitmap words, 1..64
//	  RSI        guest-physical address of the bitmap, 8-byte aligned, not
//	             crossing a page: bit i of word w names APIC ID RDI + 64*w + i
//	  RDI        lowest APIC ID of the window
//	Edge-triggered, physical destinations; a target that does not exist is
//	ignored. Reserved bits, n out of range, a bitmap outside RAM, another
//	delivery mode or a vector below 16 for fixed delivery: #GP(0), nothing
//	sent. RDMSR of MSRSendIPI: #GP.
//
// A guest sends an IPI to CPUs in several 4096-ID windows with one WRMSR
// per window: on a VM of up to 4096 vCPUs, every multicast is one exit.
//
// The unit (Unit) claims the MSR on the exit bus and sets its CPUID bit.
package pvipi

import (
	"encoding/binary"
	"errors"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hvcpuid"
	"github.com/govmm/govmm/vlapic"
)

// ABI constants.
const (
	MSRSendIPI     = 0x4D564F50
	FeatureSendIPI = 1 << 0 // in CPUID hvcpuid.Features EAX
	MaxWords       = 64
)

// Flag and FlagHelp are the unit's on/off switch on govmm's command line
// (vmm.PVFlags lists every unit's).
const (
	Flag     = "pv-ipi"
	FlagHelp = "advertise govmm's paravirtual send-IPI: one exit per multicast IPI (govmm's kernel then sends all its IPIs through it)"
)

// Unit is PV send-IPI for a VM. Its MSR is claimed whether or not the
// feature is offered: without it a WRMSR answers #GP (charged the same).
// Safe for every vCPU at once: it keeps no state of its own.
type Unit struct {
	enabled bool
	mem     Memory
	apics   *vlapic.Bus
	obs     Observer
}

// Observer traces and counts each PV send (accounting.Observer does).
type Observer interface {
	// TraceParavirt marks a paravirtual IPI sent now.
	TraceParavirt() vlapic.Trace
	// Sent counts a send of cpu's, traced t, that reached targets CPUs.
	Sent(cpu int, t vlapic.Trace, targets int)
}

// New returns the unit; enabled offers the feature.
func New(enabled bool, mem Memory, apics *vlapic.Bus, obs Observer) *Unit {
	return &Unit{enabled: enabled, mem: mem, apics: apics, obs: obs}
}

// CPUID sets the feature bit when offered.
func (u *Unit) CPUID(l *hvcpuid.Leaves) {
	if u.enabled {
		l.Features |= FeatureSendIPI
	}
}

// Register claims the MSR, in the MSR filter (an MSR KVM does not know
// reaches user space anyway; the filter makes sure, and the host probe
// checks it).
func (u *Unit) Register(b *exitbus.Bus) error {
	return b.Register(exitbus.Range{Space: exitbus.MSR, Base: MSRSendIPI, Len: 1, Name: "PV_SEND_IPI", Filter: true,
		Cause: exitbus.Fixed(exitcause.MSRPVIPI), Handler: exitbus.HandlerFunc(u.send)})
}

// send serves the trap: a WRMSR with the arguments in EDX:EAX, RSI, RDI.
func (u *Unit) send(a *exitbus.Access) error {
	if !a.Write || !u.enabled {
		return vlapic.ErrGP
	}
	regs := &a.VCPU.KVM().RunData().Sync.Regs
	req, err := Decode(u.mem, a.Value, regs.RSI, regs.RDI)
	if err != nil {
		return vlapic.ErrGP
	}
	t := u.obs.TraceParavirt()
	u.obs.Sent(a.CPU, t, req.Deliver(u.apics, a.CPU, t))
	return nil
}

// ErrInvalid is a request the ABI answers with #GP.
var ErrInvalid = errors.New("pvipi: invalid request")

// Memory reads guest-physical memory (the bitmap).
type Memory interface {
	Slice(gpa, n uint64) ([]byte, error)
}

// Request is one decoded send.
type Request struct {
	Vector   uint8
	Delivery vlapic.DeliveryMode
	Base     uint32
	Bitmap   []byte // n*8 bytes, little-endian words
}

// Decode reads a WRMSR to MSRSendIPI: value is EDX:EAX, rsi and rdi the
// registers at the exit.
func Decode(mem Memory, value, rsi, rdi uint64) (Request, error) {
	eax, edx := uint32(value), uint32(value>>32)
	r := Request{Vector: uint8(eax), Delivery: vlapic.DeliveryMode(eax >> 8 & 7), Base: uint32(rdi)}
	switch {
	case eax&^0x7FF != 0, edx == 0, edx > MaxWords, rsi&7 != 0, rdi > 0xFFFFFFFF:
		return r, ErrInvalid
	case r.Delivery != vlapic.Fixed && r.Delivery != vlapic.NMI:
		return r, ErrInvalid
	case r.Delivery == vlapic.Fixed && r.Vector < 16:
		return r, ErrInvalid
	case rsi&0xFFF+uint64(edx)*8 > 0x1000:
		return r, ErrInvalid
	}
	b, err := mem.Slice(rsi, uint64(edx)*8)
	if err != nil {
		return r, ErrInvalid
	}
	r.Bitmap = b
	return r, nil
}

// Deliver sends the request over the APIC bus, one physical destination
// per set bit (O(destinations)), traced t; it returns the number of
// targets reached.
func (r Request) Deliver(bus *vlapic.Bus, source int, t vlapic.Trace) int {
	m := vlapic.Message{Vector: r.Vector, Delivery: r.Delivery, DestMode: vlapic.Physical, Assert: true, Source: source,
		Trace: t}
	n := 0
	for w := 0; w+8 <= len(r.Bitmap); w += 8 {
		word := binary.LittleEndian.Uint64(r.Bitmap[w:])
		for word != 0 {
			i := uint32(trailingZeros(word))
			word &= word - 1
			id := uint64(r.Base) + uint64(w/8)*64 + uint64(i)
			if id >= 0xFFFFFFFF { // never the x2APIC broadcast ID
				continue
			}
			m.Dest = uint32(id)
			n += bus.Deliver(m)
		}
	}
	return n
}

func trailingZeros(x uint64) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}
