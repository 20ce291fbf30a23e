package acpi

// FACS, the Firmware ACPI Control Structure (ACPI 6.x §5.2.10): 64 bytes on a
// 64-byte boundary, no checksum. Linux wants one on any non-hardware-reduced
// platform (it holds the global lock and the waking vector). govmm has no
// S3/S4, so the waking vectors stay 0 and no flags are set.

const (
	facsLen   = 64
	facsAlign = 64
)

func facs() []byte {
	b := make([]byte, facsLen)
	copy(b[0:4], "FACS")
	le.PutUint32(b[4:], facsLen)
	b[32] = 2 // version (ACPI 4.0+)
	return b
}
