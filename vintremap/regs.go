// This file names the registers (VT-d ch. 10) and the capabilities the unit
// advertises.

package vintremap

// Register offsets in the page.
const (
	RegVER     = 0x00 // 32
	RegCAP     = 0x08 // 64
	RegECAP    = 0x10 // 64
	RegGCMD    = 0x18 // 32, write-only
	RegGSTS    = 0x1C // 32, read-only
	RegFSTS    = 0x34 // 32
	RegFECTL   = 0x38 // 32
	RegFEDATA  = 0x3C // 32
	RegFEADDR  = 0x40 // 32
	RegFEUADDR = 0x44 // 32
	RegIQH     = 0x80 // 64, read-only
	RegIQT     = 0x88 // 64
	RegIQA     = 0x90 // 64
	RegICS     = 0x9C // 32
	RegIECTL   = 0xA0 // 32
	RegIEDATA  = 0xA4 // 32
	RegIEADDR  = 0xA8 // 32
	RegIEUADDR = 0xAC // 32
	RegIRTA    = 0xB8 // 64
	// RegFR is the first fault-recording register (CAP.FRO); there are
	// NumFR of them, 16 bytes each.
	RegFR = 0x220
	// RegIOTLB is where the IOTLB registers would be (ECAP.IRO). Nothing
	// is implemented there; the offset only has to lie inside the page.
	RegIOTLB = 0xF0
)

// NumFR is the number of fault-recording registers.
const NumFR = 4

// Version is VER_REG: architecture version 1.0, as QEMU.
const Version = 0x10

// CAP_REG fields.
const (
	capND4    = 2 // ND: 256 domains (as QEMU; meaningless without DMA)
	capMGAW39 = 38 << 16
	capFRO    = RegFR / 16 << 24
	capNFR    = (NumFR - 1) << 40
)

// CAP is the capability register: no DMA-remapping address width (SAGAW 0),
// four fault-recording registers at RegFR, MGAW 39 bits and 256 domains as
// QEMU's dma-translation=off unit reports. Linux's dmar.c alloc_iommu then
// marks the unit "ignored" for DMA ("No supported address widths. Not
// attempting DMA translation.") and still uses it for interrupt remapping;
// that is commit c40aaaac1018 (David Woodhouse, 2020, also in the 4.14+
// stable series since Feb 2021): older kernels reject the unit outright
// ("Cannot get a valid agaw") and run without remapping. map_iommu needs FRO+16*NFR (0x260) and IRO*16+16 (0x100) inside the mapped
// page, which they are. CM, RWBF, PLMR/PHMR, PSI, PI and ESIRTPS are clear,
// so Linux sends a global IEC invalidation after each SIRTP.
const CAP = capND4 | capMGAW39 | capFRO | capNFR

// ECAP_REG fields.
const (
	ecapC    = 1 << 0 // coherent: the unit reads guest RAM directly, no clflush needed
	ecapQI   = 1 << 1 // queued invalidation: Linux refuses IR without it
	ecapIR   = 1 << 3 // interrupt remapping
	ecapEIM  = 1 << 4 // extended interrupt mode (x2APIC destinations)
	ecapIRO  = RegIOTLB / 16 << 8
	ecapMHMV = 0xF << 20 // any IEC index mask is accepted (no cache)
)

// ECAP returns the extended capabilities for opts: C, QI, IR, IRO, MHMV and
// EIM when opts.EIM. No DT, PT, SC, PASID, scalable mode or nesting.
func ECAP(opts Options) uint64 {
	e := uint64(ecapC | ecapQI | ecapIR | ecapIRO | ecapMHMV)
	if opts.EIM {
		e |= ecapEIM
	}
	return e
}

// GCMD / GSTS bits. A command bit in GCMD has its status twin at the same
// position in GSTS.
const (
	gTE    = 1 << 31
	gSRTP  = 1 << 30
	gQIE   = 1 << 26 // QIES
	gIRE   = 1 << 25 // IRES
	gSIRTP = 1 << 24 // IRTPS
	gCFI   = 1 << 23 // CFIS
)

// Exported status bits for tests and the platform.
const (
	GSTSQIES  = gQIE
	GSTSIRES  = gIRE
	GSTSIRTPS = gSIRTP
	GSTSCFIS  = gCFI
)

// FSTS bits.
const (
	FSTSPFO = 1 << 0 // primary fault overflow, RW1C
	FSTSPPF = 1 << 1 // primary pending fault, RO (OR of the FRs' F bits)
	FSTSIQE = 1 << 4 // invalidation queue error, RW1C
	fstsFRI = 0xFF << 8
)

// FECTL / IECTL bits.
const (
	CtlIM = 1 << 31 // interrupt mask
	CtlIP = 1 << 30 // interrupt pending, RO
)

// ICSIWC is ICS.IWC, invalidation-wait completion, RW1C.
const ICSIWC = 1

// IRTA fields.
const (
	irtaEIME = 1 << 11
	irtaS    = 0xF
	addrMask = ^uint64(0xFFF)
)

// IQA: DW (bit 11) stays 0 without scalable mode; QS 2:0 gives 2^(QS+8)
// 128-bit descriptors.
const iqaQS = 7
