// Package pci is govmm's conventional PCI bus: one bus (bus 0) of type-0
// functions behind a host bridge at 00:00.0, reached through ECAM (MMIO) and
// the legacy 0xCF8/0xCFC mechanism, with BARs placed in fixed MMIO and I/O
// windows and MSI-X (and MSI) vectors delivered through one MSISink, the VM's
// interrupt-remapping path.
//
// Model: PCI Local Bus 3.0 (configuration header §6.1-6.2, BARs §6.2.5,
// capabilities §6.7, MSI and MSI-X §6.8), PCI Express Base for ECAM's
// layout, and what Linux's drivers/pci (probe.c, msi/) actually does.
//
// Devices are state machines: a config write comes in as bytes and what must
// happen elsewhere leaves through narrow callbacks (OnBARChange, the
// MSISink). Whatever the guest does gets the architectural answer: a
// malformed or unclaimed access reads all ones and its write is ignored.
//
// Left out: PCIe extended configuration space (0x100-0xFFF reads 0), buses
// other than 0, bridges, multi-function devices, INTx (interrupt pin 0),
// expansion ROMs (reads 0), power management, hot plug, and error reporting
// (status bits never set).
//
// Concurrency: functions are built (SetBAR, AddCapability, AddMSIX) and
// added to the bus while the VM is built, before any vCPU runs. From then on
// every entry point may be called from several vCPU threads at once: each
// function guards its configuration space with its own mutex, the bus finds
// the BAR an access hits through an atomic snapshot without a lock, and
// MSI-X state has its own mutex so that device backends may Signal from any
// goroutine.
package pci

import "fmt"

// Address names a function on the bus.
type Address struct{ Bus, Device, Function uint8 }

// SourceID is the function's requester ID (bus<<8 | dev<<3 | fn): what VT-d
// interrupt remapping checks an MSI's source against.
func (a Address) SourceID() uint16 {
	return uint16(a.Bus)<<8 | uint16(a.Device&0x1F)<<3 | uint16(a.Function&7)
}

func (a Address) String() string {
	return fmt.Sprintf("%02x:%02x.%d", a.Bus, a.Device, a.Function)
}

// Header is the identity part of a type-0 configuration header.
type Header struct {
	VendorID, DeviceID, SubsystemVendorID, SubsystemID uint16
	Class                                              uint32 // base<<16 | sub<<8 | prog-if
	Revision                                           uint8
}

// The host bridge at 00:00.0: QEMU's "PCIe host bridge" IDs (Red Hat's
// vendor 0x1b36), which Linux knows and treats as a plain host bridge.
var hostBridge = Header{
	VendorID: 0x1b36, DeviceID: 0x0008,
	SubsystemVendorID: 0x1af4, SubsystemID: 0x1100,
	Class: 0x060000,
}

// Configuration header registers (type 0).
const (
	regVendor    = 0x00
	regCommand   = 0x04
	regStatus    = 0x06
	regRevision  = 0x08
	regCacheLine = 0x0C
	regHeader    = 0x0E
	regBAR0      = 0x10
	regSubsystem = 0x2C
	regROM       = 0x30
	regCapPtr    = 0x34
	regIntLine   = 0x3C
	regIntPin    = 0x3D

	headerEnd = 0x40  // capabilities start here
	cfgSize   = 0x100 // conventional configuration space; 0x100-0xFFF read 0
	ecamSize  = 0x1000

	numBARs = 6
)

// Command register bits the function implements; the others read 0.
const (
	CmdIO           = 1 << 0
	CmdMemory       = 1 << 1
	CmdBusMaster    = 1 << 2
	CmdINTxDisable  = 1 << 10
	cmdWritable     = CmdIO | CmdMemory | CmdBusMaster | CmdINTxDisable
	statusCapList   = 1 << 4
	capHeaderLength = 2 // ID, next pointer
)
