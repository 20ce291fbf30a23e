// Package kvm is govmm's typed binding to Linux's /dev/kvm for x86-64.
//
// The structs here mirror <linux/kvm.h> and <asm/kvm.h> byte for byte (their
// sizes and offsets are checked against the installed headers by
// TestABILayout); all unsafe code lives in the *_unsafe.go files. The binding
// does no policy: in particular Run returns EINTR to its caller instead of
// retrying, because an interrupted KVM_RUN is how a kick arrives.
package kvm

// KVM API version this binding speaks.
const APIVersion = 12

// Exit reasons (kvm_run.exit_reason).
const (
	ExitUnknown       = 0
	ExitException     = 1
	ExitIO            = 2
	ExitHypercall     = 3
	ExitDebug         = 4
	ExitHLT           = 5
	ExitMMIO          = 6
	ExitIRQWindowOpen = 7
	ExitShutdown      = 8
	ExitFailEntry     = 9
	ExitIntr          = 10
	ExitSetTPR        = 11
	ExitNMI           = 16
	ExitInternalError = 17
	ExitSystemEvent   = 24
	ExitIOAPICEOI     = 26 // a level-triggered vector of the user-space IOAPIC was EOIed (split irqchip)
	ExitX86RDMSR      = 29
	ExitX86WRMSR      = 30
)

// I/O directions of ExitIO.
const (
	IOIn  = 0
	IOOut = 1
)

// Internal-error sub-reasons and the emulation-failure flag.
const (
	InternalErrorEmulation = 1
	EmulationFlagInsnBytes = 1 << 0
)

// Capabilities govmm relies on.
const (
	CapIRQChip           = 0
	CapUserMemory        = 3
	CapSetTSSAddr        = 4
	CapNRVCPUs           = 9
	CapMaxVCPUs          = 66
	CapSyncRegs          = 74
	CapImmediateExit     = 136
	CapMaxVCPUID         = 128
	CapX86UserSpaceMSR   = 188
	CapX86MSRFilter      = 189
	CapCoalescedMMIO     = 15 // its value: the ring's page offset in a vCPU's mapping
	CapReadOnlyMem       = 81
	CapBinaryStatsFD     = 203
	CapGetTSCKHz         = 61
	CapVCPUEvents        = 41
	CapXSAVE             = 55
	CapIOEventFD         = 36
	CapPMUCapability     = 212
	CapXCRs              = 56
	CapXSAVE2            = 208
	CapInternalErrorData = 197
	CapIRQRouting        = 25
	CapSignalMSI         = 77
	CapSplitIRQChip      = 121
	CapX2APICAPI         = 129
	CapTSCDeadlineTimer  = 72
	CapX86SMM            = 117
	CapMultiAddressSpace = 118
)

// KVM_CAP_X2APIC_API flags: MSI and routing destinations carry 32-bit
// x2APIC IDs (bits 31:8 in address_hi), and 0xFF is not a broadcast in
// x2APIC mode.
const (
	X2APICAPIUse32BitIDs           = 1 << 0
	X2APICAPIDisableBroadcastQuirk = 1 << 1
)

// IRQRoutingMSI is KVM_IRQ_ROUTING_MSI, the type of a GSI route that
// sends an MSI.
const IRQRoutingMSI = 2

// MSI is struct kvm_msi (KVM_SIGNAL_MSI).
type MSI struct {
	AddressLo uint32
	AddressHi uint32
	Data      uint32
	Flags     uint32
	DevID     uint32
	_         [12]uint8
}

// IRQRoutingEntry is struct kvm_irq_routing_entry for an MSI route (the
// union's other members are not used).
type IRQRoutingEntry struct {
	GSI       uint32
	Type      uint32
	Flags     uint32
	_         uint32
	AddressLo uint32
	AddressHi uint32
	Data      uint32
	_         [5]uint32
}

// MaxGSIRoutes is how many routes SetGSIRouting takes: the IOAPIC's pins.
const MaxGSIRoutes = 24

// irqRouting is struct kvm_irq_routing with room for MaxGSIRoutes entries.
type irqRouting struct {
	NR      uint32
	Flags   uint32
	Entries [MaxGSIRoutes]IRQRoutingEntry
}

// LAPICState is struct kvm_lapic_state: the in-kernel LAPIC's register
// page as KVM_GET_LAPIC and KVM_SET_LAPIC see it.
type LAPICState struct {
	Regs [1024]byte
}

// KVM_CAP_X86_USER_SPACE_MSR reasons and KVM_X86_SET_MSR_FILTER flags.
const (
	PMUCapDisable = 1 << 0 // KVM_CAP_PMU_CAPABILITY argument: no vPMU

	MSRExitReasonInval   = 1 << 0
	MSRExitReasonUnknown = 1 << 1
	MSRExitReasonFilter  = 1 << 2

	MSRFilterDefaultAllow = 0
	MSRFilterDefaultDeny  = 1
	MSRFilterRead         = 1 << 0
	MSRFilterWrite        = 1 << 1
	MSRFilterMaxRanges    = 16
)

// Sync-regs bits (kvm_run.kvm_valid_regs / kvm_dirty_regs).
const (
	SyncRegsGPR    = 1 << 0
	SyncRegsSregs  = 1 << 1
	SyncRegsEvents = 1 << 2
	SyncRegsAll    = SyncRegsGPR | SyncRegsSregs | SyncRegsEvents
)

// kvm_vcpu_events.flags.
const (
	VCPUEventValidNMIPending = 1 << 0
	VCPUEventValidSIPIVector = 1 << 1
	VCPUEventValidShadow     = 1 << 2
	VCPUEventValidSMM        = 1 << 3
)

// MP states (KVM_GET/SET_MP_STATE).
const (
	MPStateRunnable      = 0
	MPStateUninitialized = 1
	MPStateInitReceived  = 2
	MPStateHalted        = 3
	MPStateSIPIReceived  = 4
)

// Regs is struct kvm_regs.
type Regs struct {
	RAX, RBX, RCX, RDX, RSI, RDI, RSP, RBP uint64
	R8, R9, R10, R11, R12, R13, R14, R15   uint64
	RIP, RFLAGS                            uint64
}

// Segment is struct kvm_segment.
type Segment struct {
	Base     uint64
	Limit    uint32
	Selector uint16
	Type     uint8
	Present  uint8
	DPL      uint8
	DB       uint8
	S        uint8
	L        uint8
	G        uint8
	AVL      uint8
	Unusable uint8
	_        uint8
}

// DTable is struct kvm_dtable.
type DTable struct {
	Base  uint64
	Limit uint16
	_     [3]uint16
}

// Sregs is struct kvm_sregs.
type Sregs struct {
	CS, DS, ES, FS, GS, SS  Segment
	TR, LDT                 Segment
	GDT, IDT                DTable
	CR0, CR2, CR3, CR4, CR8 uint64
	EFER                    uint64
	APICBase                uint64
	InterruptBitmap         [4]uint64
}

// VCPUEvents is struct kvm_vcpu_events.
type VCPUEvents struct {
	Exception struct {
		Injected     uint8
		Nr           uint8
		HasErrorCode uint8
		Pending      uint8
		ErrorCode    uint32
	}
	Interrupt struct {
		Injected uint8
		Nr       uint8
		Soft     uint8
		Shadow   uint8
	}
	NMI struct {
		Injected uint8
		Pending  uint8
		Masked   uint8
		_        uint8
	}
	SIPIVector uint32
	Flags      uint32
	SMI        struct {
		SMM          uint8
		Pending      uint8
		SMMInsideNMI uint8
		LatchedInit  uint8
	}
	TripleFault struct {
		Pending uint8
	}
	_                   [26]uint8
	ExceptionHasPayload uint8
	ExceptionPayload    uint64
}

// SyncRegs is struct kvm_sync_regs: the register state KVM stores in kvm_run
// on every exit when KVM_CAP_SYNC_REGS is in use.
type SyncRegs struct {
	Regs   Regs
	Sregs  Sregs
	Events VCPUEvents
}

// CPUIDEntry is struct kvm_cpuid_entry2.
type CPUIDEntry struct {
	Function uint32
	Index    uint32
	Flags    uint32
	EAX      uint32
	EBX      uint32
	ECX      uint32
	EDX      uint32
	_        [3]uint32
}

// CPUID entry flag: the leaf's value depends on Index.
const CPUIDFlagSignificantIndex = 1 << 0

// UserspaceMemoryRegion is struct kvm_userspace_memory_region.
type UserspaceMemoryRegion struct {
	Slot          uint32
	Flags         uint32
	GuestPhysAddr uint64
	MemorySize    uint64
	UserspaceAddr uint64
}

// MemReadOnly is KVM_MEM_READONLY: the guest reads the slot's memory,
// its writes exit as MMIO (and may be coalesced).
const MemReadOnly = 1 << 1

// CoalescedZone is struct kvm_coalesced_mmio_zone: an MMIO (or, with PIO
// set, port) range whose writes KVM queues in the coalesced ring instead
// of exiting.
type CoalescedZone struct {
	Addr uint64
	Size uint32
	PIO  uint32
}

// CoalescedWrite is struct kvm_coalesced_mmio: one write KVM queued.
type CoalescedWrite struct {
	PhysAddr uint64
	Len      uint32
	PIO      uint32
	Data     [8]byte
}

// coalescedRingHead is the head of struct kvm_coalesced_mmio_ring: first
// is user space's (the next entry to consume), last KVM's (the next it
// fills); the entries follow.
type coalescedRingHead struct {
	First, Last uint32
}

// CoalescedRingEntries is KVM_COALESCED_MMIO_MAX: the entries of the
// ring's one page.
const CoalescedRingEntries = (4096 - 8) / 24

// EnableCap is struct kvm_enable_cap.
type EnableCap struct {
	Cap   uint32
	Flags uint32
	Args  [4]uint64
	_     [64]uint8
}

// MSRFilterRange is struct kvm_msr_filter_range.
type MSRFilterRange struct {
	Flags  uint32
	NMSRs  uint32
	Base   uint32
	_      uint32
	Bitmap uintptr // *u8
}

// MSRFilter is struct kvm_msr_filter.
type MSRFilter struct {
	Flags  uint32
	_      uint32
	Ranges [MSRFilterMaxRanges]MSRFilterRange
}

// Interrupt is struct kvm_interrupt.
type Interrupt struct {
	IRQ uint32
}

// MPState is struct kvm_mp_state.
type MPState struct {
	State uint32
}

// ClockData is struct kvm_clock_data (KVM_GET_CLOCK, KVM_SET_CLOCK): the
// VM's kvmclock, which a restored VM continues from.
type ClockData struct {
	Clock    uint64
	Flags    uint32
	Pad0     uint32
	Realtime uint64
	HostTSC  uint64
	Pad      [4]uint32
}

// StatsHeader is struct kvm_stats_header.
type StatsHeader struct {
	Flags      uint32
	NameSize   uint32
	NumDesc    uint32
	IDOffset   uint32
	DescOffset uint32
	DataOffset uint32
}

// statsDescFixed is the fixed part of struct kvm_stats_desc (the name follows).
type statsDescFixed struct {
	Flags      uint32
	Exponent   int16
	Size       uint16
	Offset     uint32
	BucketSize uint32
}

// Run is the fixed head of struct kvm_run, the page shared with KVM for each
// vCPU. The exit-specific union is Exit; use the typed accessors on VCPU.
type Run struct {
	RequestInterruptWindow     uint8
	ImmediateExit              uint8
	_                          [6]uint8
	ExitReason                 uint32
	ReadyForInterruptInjection uint8
	IFFlag                     uint8
	Flags                      uint16
	CR8                        uint64
	APICBase                   uint64
	Exit                       [256]byte
	ValidRegs                  uint64
	DirtyRegs                  uint64
	Sync                       SyncRegs
	_                          [2048 - syncRegsSize]byte
}

const syncRegsSize = 144 + 312 + 64

// IOExit is the io member of the kvm_run exit union.
type IOExit struct {
	Direction  uint8
	Size       uint8
	Port       uint16
	Count      uint32
	DataOffset uint64
}

// MMIOExit is the mmio member of the kvm_run exit union.
type MMIOExit struct {
	PhysAddr uint64
	Data     [8]byte
	Len      uint32
	IsWrite  uint8
}

// MSRExit is the msr member of the kvm_run exit union (RDMSR/WRMSR exits).
type MSRExit struct {
	Error  uint8
	_      [7]uint8
	Reason uint32
	Index  uint32
	Data   uint64
}

// InternalExit is the internal / emulation_failure member of the union.
type InternalExit struct {
	Suberror uint32
	NData    uint32
	Data     [16]uint64
}

// EmulationFailure is the emulation_failure overlay of InternalExit.
type EmulationFailure struct {
	Suberror  uint32
	NData     uint32
	Flags     uint64
	InsnSize  uint8
	InsnBytes [15]uint8
}

// SystemEventExit is the system_event member of the union.
type SystemEventExit struct {
	Type  uint32
	NData uint32
	Data  [16]uint64
}

// FailEntryExit is the fail_entry member of the union.
type FailEntryExit struct {
	HardwareEntryFailureReason uint64
	CPU                        uint32
}

// DebugRegs is struct kvm_debugregs: DR0-DR3, DR6 and DR7 as KVM keeps
// them for the vCPU (KVM_GET/SET_DEBUGREGS; flags must be 0).
type DebugRegs struct {
	DB       [4]uint64
	DR6      uint64
	DR7      uint64
	Flags    uint64
	Reserved [9]uint64
}

// Debug register values after RESET or INIT (SDM vol. 3, table 9-1; KVM's
// DR6_ACTIVE_LOW and DR7_FIXED_1).
const (
	DR6Init = 0xFFFF0FF0
	DR7Init = 0x400
)

// XCRs is struct kvm_xcrs: the vCPU's extended control registers (XCR0 is
// the only one x86 defines).
type XCRs struct {
	N     uint32
	Flags uint32
	XCRs  [16]XCR
	_     [16]uint64
}

// XCR is struct kvm_xcr.
type XCR struct {
	XCR   uint32
	_     uint32
	Value uint64
}

// XSAVEMinSize is the size of struct kvm_xsave: what KVM_GET_XSAVE fills.
// With KVM_CAP_XSAVE2 the buffer is as large as that capability says.
const XSAVEMinSize = 4096

// IOEventFD is struct kvm_ioeventfd: a guest write to Addr (Len bytes)
// signals the eventfd FD inside KVM, with no exit to user space.
type IOEventFD struct {
	DataMatch uint64
	Addr      uint64
	Len       uint32
	FD        int32
	Flags     uint32
	_         [36]byte
}

// IOEventFD flags.
const (
	IOEventFDFlagDataMatch = 1 << 0
	IOEventFDFlagPIO       = 1 << 1
	IOEventFDFlagDeassign  = 1 << 2
)

// SMMAddressSpace, or'ed into KVM_SET_USER_MEMORY_REGION's slot number,
// puts the slot in address space 1: the memory a vCPU in system-management
// mode sees (KVM_CAP_MULTI_ADDRESS_SPACE). Address space 0 is the rest.
const SMMAddressSpace = 1 << 16
