// Package vlapic is govmm's local APIC: a pure state machine, with no KVM in
// it, for every vCPU of a VM plus the APIC bus that routes interrupts between
// them.
//
// Register reads and writes go in (xAPIC MMIO page or x2APIC MSRs); what must
// happen comes out: interrupts land in a target's IRR and the Sink is told
// which CPU has something new to deliver; level-triggered EOIs are handed to
// the EOIHandler (the IOAPIC); the timer reports its next deadline on the
// injected Clock. The VMM (package vcpu) drives it from its exits and decides
// how to inject, kick or wake. Whoever measures interrupts is told what
// happens to each one through the Observer (observe.go); nothing here
// depends on it.
//
// Model: Intel SDM vol. 3A ch. 11 (xAPIC) and ch. 11.12 (x2APIC), with
// Linux's arch/x86/kvm/lapic.c as the reference for the details the SDM leaves
// open. Left out: SMI delivery (accepted and dropped), the remote-read
// delivery mode, the APIC error interrupt for "send accept" errors (no real
// bus), arbitration IDs, focus processor checking, directed EOI.
//
// Concurrency: each LAPIC guards its registers with its own mutex. A vCPU
// thread calls the register methods of its own LAPIC; any thread may deliver
// to any LAPIC through the Bus. No method holds two LAPIC locks at once, and
// the Sink and EOIHandler are always called with no LAPIC lock held. The
// routing tables are rebuilt copy-on-write when an ID, LDR, DFR or mode
// changes and read with one atomic load per delivery.
//
// Two delivery paths, chosen per Bus (Options.AVIC): plain, where every
// accepted interrupt sets the target's IRR under the target's mutex; and
// AVIC-style (avic.go), where fixed and lowest-priority edge interrupts are
// posted to the target's IRR backing page with an atomic OR and no target
// lock, and the target folds the page into IRR under its own mutex before
// it looks for a deliverable interrupt. Both paths notify the Sink after the
// interrupt is visible, so a target that looks after the notification
// always finds it.
package vlapic

import (
	"errors"
	"fmt"
)

// ErrGP is returned by register accesses that the architecture answers with a
// general-protection fault (#GP(0)): reserved bits in an x2APIC MSR write, a
// write to a read-only x2APIC register, an access to a non-existent x2APIC
// register, an illegal APIC_BASE transition.
var ErrGP = errors.New("vlapic: #GP")

// DefaultBase is the physical address of the xAPIC page after reset.
const DefaultBase = 0xFEE00000

// MSR numbers owned by the local APIC.
const (
	MSRAPICBase    = 0x1B
	MSRTSCDeadline = 0x6E0
	MSRX2APICFirst = 0x800
	MSRX2APICLast  = 0x8FF
)

// APIC_BASE MSR bits.
const (
	BaseBSP  = 1 << 8
	BaseEXTD = 1 << 10 // x2APIC mode
	BaseEN   = 1 << 11 // global enable
)

// Mode is the operating mode selected by APIC_BASE.
type Mode uint8

const (
	ModeDisabled Mode = iota // EN=0: the page reads as unbacked, MSRs #GP
	ModeXAPIC                // EN=1 EXTD=0: MMIO page
	ModeX2APIC               // EN=1 EXTD=1: MSRs 0x800-0x8FF
)

// DeliveryMode is the ICR / redirection-entry delivery mode field.
type DeliveryMode uint8

const (
	Fixed          DeliveryMode = 0
	LowestPriority DeliveryMode = 1
	SMI            DeliveryMode = 2
	NMI            DeliveryMode = 4
	INIT           DeliveryMode = 5
	StartUp        DeliveryMode = 6
	ExtINT         DeliveryMode = 7
)

// DestMode selects how Message.Dest is matched.
type DestMode uint8

const (
	Physical DestMode = 0
	Logical  DestMode = 1
)

// Shorthand is the ICR destination shorthand.
type Shorthand uint8

const (
	NoShorthand      Shorthand = 0
	Self             Shorthand = 1
	AllIncludingSelf Shorthand = 2
	AllExcludingSelf Shorthand = 3
)

// Trigger is the trigger mode of an interrupt.
type Trigger uint8

const (
	Edge  Trigger = 0
	Level Trigger = 1
)

// Message is one interrupt on the APIC bus: from an ICR write, an IOAPIC
// redirection entry, an MSI or a remapped IRTE. Dest is an 8-bit xAPIC
// destination (in bits 7:0) when the targets are in xAPIC mode, or a 32-bit
// x2APIC destination; 0xFF resp. 0xFFFFFFFF is broadcast.
type Message struct {
	Vector    uint8
	Delivery  DeliveryMode
	DestMode  DestMode
	Trigger   Trigger
	Assert    bool // level: false is an INIT level de-assert, which is ignored
	Shorthand Shorthand
	Dest      uint32
	Source    int // index of the sending CPU for shorthands; -1 for devices
	// Trace is the Observer's mark on the interrupt (observe.go), handed
	// back when a target accepts it; 0: none.
	Trace Trace
}

// Sink is told, with no APIC lock held, that cpu's LAPIC has something new
// that may need delivery: an IRR bit, an NMI, an INIT or a SIPI. The VMM
// kicks or wakes that vCPU. Notify may be called from any goroutine,
// including the target's own, and must not block.
type Sink interface {
	Notify(cpu int)
}

// Clock gives the time the timer runs on. Now is monotonic nanoseconds;
// TSC is the guest's time-stamp counter at the same instant. Tests use a fake
// clock so that timer behaviour is instant and exact.
type Clock interface {
	Now() int64
	TSC() uint64
}

// Options configures a Bus.
type Options struct {
	// TSCHz is the guest TSC frequency, used to turn a TSC deadline into
	// Clock time. BusHz is the APIC timer's input clock before the divide
	// configuration (KVM uses 1 GHz).
	TSCHz uint64
	BusHz uint64
	// X2APIC reports whether CPUID advertises x2APIC; without it
	// APIC_BASE.EXTD is a reserved bit (#GP).
	X2APIC bool
	// PhysAddrBits is the guest's MAXPHYADDR (CPUID 0x80000008 EAX[7:0]):
	// APIC_BASE bits from it up are reserved. 0 means 52.
	PhysAddrBits int
	// AVIC selects AVIC-style delivery (avic.go): fixed and
	// lowest-priority edge interrupts are posted to the target's IRR
	// backing page without taking its lock. false is the plain path.
	AVIC bool
	// Observer, if set, is told what happens to every interrupt
	// (observe.go); nil is NopObserver.
	Observer Observer
}

// Events are the non-vectored things a LAPIC has latched for its vCPU.
type Events struct {
	// NMIs is how many NMIs were delivered since the last take, up to
	// MaxLatchedNMIs: two NMIs that arrive together are two, as they are
	// to KVM's own LAPIC (each kvm_inject_nmi queues one; process_nmi in
	// arch/x86/kvm/x86.c keeps up to two, one to inject and one latched
	// behind it, one when NMIs are blocked). Folding them into one lost
	// the second NMI of kvm-unit-tests' "multiple NMI" pattern.
	NMIs       uint8
	INIT       bool
	SIPI       bool
	SIPIVector uint8
	ExtINT     bool
	// SMI: a system-management interrupt was accepted (an IPI or message
	// with delivery mode SMI); the vCPU enters SMM (KVM_SMI), as it does
	// on KVM's LAPIC (kvm_inject_smi).
	SMI bool
	// INITFrom is the latest INIT's sender, when INIT is set: a vCPU's
	// index (its ICR) or -1 (a device's message: IOAPIC, MSI, remapped).
	// An INIT to the BSP resets the machine; its message names the sender.
	INITFrom int
}

// None says whether no event is latched: e == Events{}, said field by
// field, because the compiler compares a struct with its zero value by
// reading a zero from the runtime's data (runtime.zeroVal), a page of its
// own in every EOI exit's step (scripts/rtt-pages.sh). TestEventsNone
// keeps it whole when a field is added.
func (e *Events) None() bool {
	return e.NMIs == 0 && !e.INIT && !e.SIPI && e.SIPIVector == 0 && !e.ExtINT && !e.SMI && e.INITFrom == 0
}

// MaxLatchedNMIs is the most NMIs a LAPIC keeps for its CPU: more can
// never be delivered (one in service blocks NMIs, one more is latched).
const MaxLatchedNMIs = 2

// Effect tells the caller of a register write what it caused: an ICR (or
// SELF_IPI) write sent Msg to Targets CPUs.
type Effect struct {
	Register Register
	IPI      bool
	Msg      Message
	Targets  int
	// Settled: the write was an EOI that left the LAPIC with nothing for
	// its CPU to act on (no vector requested, AVIC page folded; no event
	// latched; the timer stopped): the vCPU's next entry needs no look
	// unless it is notified before (vcpu's quietEntry).
	Settled bool
}

// Register names an APIC register by its xAPIC offset >> 4 (the x2APIC MSR
// is 0x800 + Register). RegisterOfOffset and RegisterOfMSR map accesses to it.
type Register uint16

const (
	RegID         Register = 0x02
	RegVersion    Register = 0x03
	RegTPR        Register = 0x08
	RegAPR        Register = 0x09
	RegPPR        Register = 0x0A
	RegEOI        Register = 0x0B
	RegRRD        Register = 0x0C
	RegLDR        Register = 0x0D
	RegDFR        Register = 0x0E
	RegSVR        Register = 0x0F
	RegISR0       Register = 0x10 // ..0x17
	RegTMR0       Register = 0x18 // ..0x1F
	RegIRR0       Register = 0x20 // ..0x27
	RegESR        Register = 0x28
	RegLVTCMCI    Register = 0x2F
	RegICR        Register = 0x30 // low; in x2APIC mode the whole 64-bit ICR
	RegICR2       Register = 0x31 // xAPIC only
	RegLVTTimer   Register = 0x32
	RegLVTThermal Register = 0x33
	RegLVTPerf    Register = 0x34
	RegLVTLINT0   Register = 0x35
	RegLVTLINT1   Register = 0x36
	RegLVTError   Register = 0x37
	RegTimerICR   Register = 0x38 // initial count
	RegTimerCCR   Register = 0x39 // current count
	RegTimerDCR   Register = 0x3E // divide configuration
	RegSelfIPI    Register = 0x3F // x2APIC only
)

// registerNames are the registers' names in exit causes, tables and
// metrics (accounting's causes are named by them); unnamed ones print as
// regXX.
var registerNames = map[Register]string{
	RegID: "id", RegVersion: "version", RegTPR: "tpr", RegAPR: "apr", RegPPR: "ppr", RegEOI: "eoi",
	RegRRD: "rrd", RegLDR: "ldr", RegDFR: "dfr", RegSVR: "svr", RegESR: "esr", RegLVTCMCI: "lvt_cmci",
	RegICR: "icr", RegICR2: "icr2", RegLVTTimer: "lvt_timer", RegLVTThermal: "lvt_thermal", RegLVTPerf: "lvt_perf",
	RegLVTLINT0: "lvt_lint0", RegLVTLINT1: "lvt_lint1", RegLVTError: "lvt_error", RegTimerICR: "timer_icr",
	RegTimerCCR: "timer_ccr", RegTimerDCR: "timer_dcr", RegSelfIPI: "self_ipi",
}

// String names the register: isrN, tmrN and irrN for the eight words of
// ISR, TMR and IRR, the name in registerNames, else regXX.
func (r Register) String() string {
	switch {
	case r >= RegISR0 && r < RegISR0+8:
		return fmt.Sprintf("isr%d", r-RegISR0)
	case r >= RegTMR0 && r < RegTMR0+8:
		return fmt.Sprintf("tmr%d", r-RegTMR0)
	case r >= RegIRR0 && r < RegIRR0+8:
		return fmt.Sprintf("irr%d", r-RegIRR0)
	}
	if n, ok := registerNames[r]; ok {
		return n
	}
	return fmt.Sprintf("reg%02x", uint16(r))
}

// RegisterOfOffset names the register at an offset into the xAPIC page.
func RegisterOfOffset(off uint64) Register { return Register((off & 0xFFF) >> 4) }

// RegisterOfMSR names the register behind an x2APIC MSR (0x800-0x8FF).
func RegisterOfMSR(msr uint32) Register { return Register(msr - MSRX2APICFirst) }
