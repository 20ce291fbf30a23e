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
	kvmRun                 = io(0x80)
	kvmGetRegs             = ior(0x81, 144)
	kvmSetRegs             = iow(0x82, 144)
	kvmGetSregs            = ior(0x83, 312)
	kvmSetSregs            = iow(0x84, 312)
	kvmInterrupt           = iow(0x86, 4)
	kvmSetCPUID2           = iow(0x90, 8)
	kvmNMI                 = io(0x9a)
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
)
