package acpi

// RSDP, the Root System Description Pointer (ACPI 6.x §5.2.5.3), revision 2:
// 36 bytes, on a 16-byte boundary. Linux finds it either through the boot
// protocol (boot_params.acpi_rsdp_addr) or by scanning the EBDA and
// 0xE0000-0xFFFFF on 16-byte boundaries.
//
// ACPICA (and so Linux) uses the XSDT when the revision is > 1 and
// XsdtAddress is not 0, otherwise the RSDT; govmm provides both when the
// tables lie below 4 GiB so that older or 32-bit-only readers work too.

const rsdpLen = 36

func rsdp(oemID string, rsdtAddr uint32, xsdtAddr uint64) []byte {
	b := make([]byte, rsdpLen)
	copy(b[0:8], "RSD PTR ")
	copy(b[9:15], oemID)
	b[15] = 2 // revision: ACPI 2.0+
	le.PutUint32(b[16:], rsdtAddr)
	le.PutUint32(b[20:], rsdpLen)
	le.PutUint64(b[24:], xsdtAddr)
	b[8] = -sum(b[:20])  // checksum of the ACPI 1.0 part
	b[32] = -sum(b[:36]) // extended checksum of the whole structure
	return b
}
