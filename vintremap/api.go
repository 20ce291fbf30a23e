// Package vintremap is govmm's interrupt-remapping unit: the interrupt half of
// an Intel VT-d remapping engine, as a pure state machine with no KVM in it.
//
// Register reads and writes go in (one 4 KiB MMIO page at Base); device
// interrupts go in as MSI writes (TranslateMSI) or IOAPIC redirection entries
// (TranslateIOAPIC) and come out as vlapic.Messages for the APIC bus, or as
// a Fault that has been recorded in the fault registers. Interrupts the unit
// raises itself (fault events, invalidation-wait completions) leave through
// the Interrupter. The interrupt-remapping table (IRT) and the invalidation
// queue live in guest memory, read through Memory.
//
// Model: Intel VT-d spec rev 3.x, ch. 5 (interrupt remapping), 6.5.2 (queued
// invalidation), 7 (fault recording and events) and 10 (registers), with
// QEMU's hw/i386/intel_iommu.c (intremap=on, dma-translation=off) for the
// details the spec leaves open, and Linux's drivers/iommu/intel/dmar.c and
// irq_remapping.c for what a guest actually programs.
//
// Left out: DMA remapping of any kind (CAP.SAGAW is 0, so Linux keeps the unit
// for interrupt remapping only and never programs the root table; see CAP;
// TE, SRTP, SFL, WBF and EAFL commands are ignored), posted interrupts
// (CAP.PI is 0: IRTE.IM=1 is a reserved-bit fault), 256-bit descriptors and
// scalable mode (IQA.DW reads 0), the advanced fault log, fault collapsing,
// the invalidation-queue error record (IQERCD reads 0: "no information") and
// the register-based IOTLB and context-command registers.
//
// No interrupt-entry cache: every translation reads its IRTE from guest
// memory, so an interrupt-entry-cache invalidation has nothing to drop and is
// trivially honoured (as is the implicit one of an IRTA change).
//
// Concurrency: one mutex guards the unit; any goroutine may call any method.
// Memory is called with the lock held; the Interrupter never is.
package vintremap

import (
	"errors"
	"fmt"
)

// Base is the guest-physical address of the register page (4 KiB), as for
// QEMU's intel-iommu.
const Base = 0xFED90000

// Size is the size of the register page.
const Size = 0x1000

// Memory is guest-physical memory: the IRT and the invalidation queue live
// there, and invalidation-wait descriptors write their status there. An error
// (an address outside RAM) becomes a fault or an invalidation-queue error.
type Memory interface {
	ReadGPA(gpa uint64, b []byte) error
	WriteGPA(gpa uint64, b []byte) error
}

// Interrupter delivers an interrupt the unit raises itself (a fault event or
// an invalidation-wait completion) as an MSI: addr (upper<<32 | lower) and
// data as programmed in FEUADDR/FEADDR/FEDATA resp. IEUADDR/IEADDR/IEDATA.
// These messages are not remapped: the platform decodes them as
// compatibility-format MSIs (in x2APIC mode Linux puts destination bits
// 31:8 in the upper address). MSI is called with no lock held.
type Interrupter interface {
	MSI(addr uint64, data uint32)
}

// Options configures a Unit.
type Options struct {
	// EIM advertises extended interrupt mode (ECAP.EIM): IRTA.EIME becomes
	// writable and IRTEs then carry 32-bit x2APIC destinations. Linux needs
	// it to run x2APIC with more than 255 APIC IDs.
	EIM bool
}

// ErrNotInterrupt is returned by TranslateMSI for a write outside the
// 0xFEExxxxx interrupt range: not an interrupt request at all.
var ErrNotInterrupt = errors.New("vintremap: MSI address outside 0xFEExxxxx")

// Fault reasons for interrupt requests (VT-d table "Interrupt Remapping Fault
// Conditions"). Qualified ones (marked Q) are not recorded when the IRTE's
// FPD bit is set.
const (
	ReasonRequestReserved = 0x20 // reserved bits set in a remappable request
	ReasonIndexOverflow   = 0x21 // index beyond the IRT size (IRTA.S)
	ReasonNotPresent      = 0x22 // Q: IRTE.P clear
	ReasonTableAccess     = 0x23 // the IRTE could not be read
	ReasonIRTEReserved    = 0x24 // Q: reserved bits or values in a present IRTE
	ReasonCompatBlocked   = 0x25 // compatibility format while CFIS=0 or EIME=1
	ReasonSourceID        = 0x26 // Q: source-id verification failed (or SVT reserved)
)

// NumReasons is the number of fault reasons counted (0x20..0x28 in the spec;
// this unit raises 0x20..0x26).
const NumReasons = 9

var reasonText = [NumReasons]string{
	"reserved bits in the request",
	"index beyond the table size",
	"IRTE not present",
	"IRT access error",
	"reserved bits in the IRTE",
	"compatibility format blocked",
	"source-id check failed",
	"posted descriptor access error",
	"reserved bits in the posted descriptor",
}

// Fault is an interrupt request the unit refused. Whether it was recorded in
// a fault-recording register depends on FPD and free registers; the request
// is dropped either way.
type Fault struct {
	Reason uint8
	Index  uint16 // interrupt index, when the request had one
	SID    uint16 // requester: bus<<8 | dev<<3 | fn
}

func (f Fault) Error() string {
	text := "unknown reason"
	if r := int(f.Reason) - ReasonRequestReserved; r >= 0 && r < NumReasons {
		text = reasonText[r]
	}
	return fmt.Sprintf("vintremap: fault %#x (%s) at index %d from %02x:%02x.%d",
		f.Reason, text, f.Index, f.SID>>8, f.SID>>3&0x1F, f.SID&7)
}
