package kvm

// ioctl request numbers, computed like <asm-generic/ioctl.h>.
const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
	kvmio    = 0xAE
)

func ioc(dir, nr, size uintptr) uintptr { return dir<<30 | kvmio<<8 | nr | size<<16 }
func io(nr uintptr) uintptr             { return ioc(iocNone, nr, 0) }
func ior(nr, size uintptr) uintptr      { return ioc(iocRead, nr, size) }
func iow(nr, size uintptr) uintptr      { return ioc(iocWrite, nr, size) }
func iowr(nr, size uintptr) uintptr     { return ioc(iocRead|iocWrite, nr, size) }

// KVM_RUN and KVM_INTERRUPT, which every exit and every injection make,
// are constants (ioc's arithmetic written out; abi_test.go checks them
// against the kernel's numbers): a variable's page would be one more that
// each exit touches (vcpu/loop.go says why pages count).
const (
	kvmRun       = iocNone<<30 | kvmio<<8 | 0x80
	kvmInterrupt = iocWrite<<30 | kvmio<<8 | 0x86 | 4<<16
)

var (
	kvmGetAPIVersion       = io(0x00)
	kvmCreateVM            = io(0x01)
	kvmCheckExtension      = io(0x03)
	kvmGetVCPUMmapSize     = io(0x04)
	kvmGetSupportedCPUID   = iowr(0x05, 8)
	kvmCreateVCPU          = io(0x41)
	kvmSetUserMemoryRegion = iow(0x46, 32)
	kvmSetTSSAddr          = io(0x47)
	kvmSetIdentityMapAddr  = iow(0x48, 8)
	kvmGetRegs             = ior(0x81, 144)
	kvmSetRegs             = iow(0x82, 144)
	kvmGetSregs            = ior(0x83, 312)
	kvmSetSregs            = iow(0x84, 312)
	kvmSetCPUID2           = iow(0x90, 8)
	kvmNMI                 = io(0x9a)
	kvmSMI                 = io(0xb7)
	kvmGetMPState          = ior(0x98, 4)
	kvmEnableCap           = iow(0xa3, 104)
	kvmGetTSCKHz           = io(0xa3)
	kvmGetVCPUEvents       = ior(0x9f, 64)
	kvmSetVCPUEvents       = iow(0xa0, 64)
	kvmX86SetMSRFilter     = iow(0xc6, 392)
	kvmGetStatsFD          = io(0xce)
	kvmIOEventFD           = iow(0x79, 64)
	kvmGetMSRs             = iowr(0x88, 8)
	kvmSetMSRs             = iow(0x89, 8)
	kvmSetSignalMask       = iow(0x8b, 4)
	kvmGetXSAVE            = ior(0xa4, 4096)
	kvmSetXSAVE            = iow(0xa5, 4096)
	kvmGetXCRs             = ior(0xa6, 392)
	kvmSetXCRs             = iow(0xa7, 392)
	kvmGetXSAVE2           = ior(0xcf, 4096)
	kvmSetDebugRegs        = iow(0xa2, 128)
	kvmGetDebugRegs        = ior(0xa1, 128)
	kvmSetMPState          = iow(0x99, 4)
	kvmGetClock            = ior(0x7c, 48)
	kvmSetClock            = iow(0x7b, 48)
	kvmRegisterCoalesced   = iow(0x67, 16)
	kvmSignalMSI           = iow(0xa5, 32)
	kvmSetGSIRouting       = iow(0x6a, 8)
	kvmGetLAPIC            = ior(0x8e, 1024)
	kvmSetLAPIC            = iow(0x8f, 1024)
)

// Ioctl is one of the KVM request numbers above, by its <linux/kvm.h> name,
// and whether a built VM still makes it: package sandbox lets exactly the
// running ones through its seccomp filter and refuses the rest.
type Ioctl struct {
	Name    string
	Request uintptr
	// Running: made once the VM is built (by the vCPU loop, the devices,
	// the report); otherwise only while building it, or probing a host.
	Running bool
	Why     string
}

// Ioctls classifies every request number this package makes (a test
// checks that none is missing), running ones in the order of their
// frequency: a filter that looks them up in this order finds KVM_RUN, one
// per exit, first.
var Ioctls = []Ioctl{
	{"KVM_RUN", kvmRun, true, "every entry into the guest"},
	{"KVM_INTERRUPT", kvmInterrupt, true, "injecting a vector govmm's LAPIC accepted"},
	{"KVM_GET_VCPU_EVENTS", kvmGetVCPUEvents, true, "pending events before an injection, soft interrupts govmm completes, dumps"},
	{"KVM_SET_VCPU_EVENTS", kvmSetVCPUEvents, true, "exceptions govmm raises (#GP, #UD) and the events INIT resets"},
	{"KVM_NMI", kvmNMI, true, "injecting an NMI"},
	{"KVM_SMI", kvmSMI, true, "an SMI govmm's LAPIC accepted"},
	{"KVM_GET_REGS", kvmGetRegs, true, "instruction completions, INIT/SIPI, dumps"},
	{"KVM_SET_REGS", kvmSetRegs, true, "instruction completions, INIT/SIPI"},
	{"KVM_GET_SREGS", kvmGetSregs, true, "page walks of completions, INIT/SIPI, dumps"},
	{"KVM_SET_SREGS", kvmSetSregs, true, "INIT/SIPI"},
	{"KVM_GET_MSRS", kvmGetMSRs, true, "the guest TSC for the LAPIC timer, INIT"},
	{"KVM_SET_MSRS", kvmSetMSRs, true, "the MSRs INIT resets"},
	{"KVM_SET_DEBUGREGS", kvmSetDebugRegs, true, "DR6/DR7 as INIT resets them"},
	{"KVM_GET_XSAVE", kvmGetXSAVE, true, "XSAVE-family completions (hosts without KVM_GET_XSAVE2)"},
	{"KVM_GET_XSAVE2", kvmGetXSAVE2, true, "XSAVE-family completions"},
	{"KVM_SET_XSAVE", kvmSetXSAVE, true, "XSAVE-family completions, INIT"},
	{"KVM_GET_XCRS", kvmGetXCRs, true, "XGETBV/XSETBV completions"},
	{"KVM_SET_XCRS", kvmSetXCRs, true, "XSETBV completions, INIT"},
	{"KVM_GET_MP_STATE", kvmGetMPState, true, "dumps, snapshots"},
	{"KVM_GET_DEBUGREGS", kvmGetDebugRegs, true, "snapshots"},
	{"KVM_SET_MP_STATE", kvmSetMPState, true, "restoring a snapshot: each vCPU loads its saved state on its own thread as its loop starts"},
	{"KVM_GET_CLOCK", kvmGetClock, true, "snapshots: the VM's kvmclock"},
	{"KVM_GET_TSC_KHZ", kvmGetTSCKHz, true, "the LAPIC timer's clock"},
	{"KVM_IOEVENTFD", kvmIOEventFD, true, "a virtio queue's notify eventfd, re-registered as the guest moves its BAR"},
	{"KVM_GET_STATS_FD", kvmGetStatsFD, true, "KVM's own exit statistics for the report and the dashboard"},
	{"KVM_SIGNAL_MSI", kvmSignalMSI, true, "--lapic=kvm: a device interrupt into KVM's LAPIC"},
	{"KVM_SET_GSI_ROUTING", kvmSetGSIRouting, true, "--lapic=kvm: the IOAPIC's level-triggered pins, whose EOIs KVM sends back"},
	{"KVM_GET_LAPIC", kvmGetLAPIC, true, "--lapic=kvm: dumps and snapshots of KVM's LAPIC"},
	{"KVM_SET_LAPIC", kvmSetLAPIC, true, "--lapic=kvm: building the vCPUs (x2APIC at hand-off); restoring a snapshot, each vCPU its LAPIC on its own thread as its loop starts"},

	{"KVM_GET_API_VERSION", kvmGetAPIVersion, false, "opening /dev/kvm"},
	{"KVM_CREATE_VM", kvmCreateVM, false, "building the VM"},
	{"KVM_CHECK_EXTENSION", kvmCheckExtension, false, "building the VM, probing the host"},
	{"KVM_GET_VCPU_MMAP_SIZE", kvmGetVCPUMmapSize, false, "opening /dev/kvm"},
	{"KVM_GET_SUPPORTED_CPUID", kvmGetSupportedCPUID, false, "building the vCPUs' CPUID"},
	{"KVM_CREATE_VCPU", kvmCreateVCPU, false, "building the VM"},
	{"KVM_SET_USER_MEMORY_REGION", kvmSetUserMemoryRegion, false, "mapping guest RAM"},
	{"KVM_SET_TSS_ADDR", kvmSetTSSAddr, false, "building the VM (VMX's real-mode TSS)"},
	{"KVM_SET_IDENTITY_MAP_ADDR", kvmSetIdentityMapAddr, false, "building the VM (VMX's identity map)"},
	{"KVM_SET_CPUID2", kvmSetCPUID2, false, "building the vCPUs"},
	{"KVM_ENABLE_CAP", kvmEnableCap, false, "building the VM (user-space MSRs, the PMU off)"},
	{"KVM_X86_SET_MSR_FILTER", kvmX86SetMSRFilter, false, "building the VM: the MSRs govmm serves"},
	{"KVM_REGISTER_COALESCED_MMIO", kvmRegisterCoalesced, false, "building the VM: the early console's write queue"},
	{"KVM_SET_CLOCK", kvmSetClock, false, "restoring a snapshot: the VM's kvmclock"},
	{"KVM_SET_SIGNAL_MASK", kvmSetSignalMask, false, "probing the host: a probe vCPU blocks every signal in KVM_RUN (govmm's vCPU threads block them on the thread instead)"},
}

// IoctlNamed is the request number of name, from Ioctls; ok is false for
// a name it does not list.
func IoctlNamed(name string) (req uintptr, ok bool) {
	for _, i := range Ioctls {
		if i.Name == name {
			return i.Request, true
		}
	}
	return 0, false
}
