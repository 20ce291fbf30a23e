package acpi

// Resource descriptors (ACPI 6.x §6.4) for the PCI host bridge's _CRS and
// the motherboard-resources device: the few ResourceTemplate() items they
// need, encoded as iasl encodes them.

const (
	resIO            = 0x47 // small: I/O port descriptor
	resEndTag        = 0x79 // small: end tag, length 1
	resMemory32Fixed = 0x86 // large
	resDWordAddress  = 0x87 // large: DWord address space descriptor
	resWordAddress   = 0x88 // large: Word address space descriptor

	addrSpaceMemory = 0
	addrSpaceIO     = 1
	addrSpaceBus    = 2

	// General flags of an address space descriptor: a producer (the
	// bridge decodes it for its children) with a fixed minimum and
	// maximum, positive decode.
	addrFlagsProducerFixed = 1<<3 | 1<<2

	ioRangeEntire  = 3 // WordIO type-specific flags: EntireRange
	memReadWrite   = 1 // DWordMemory type-specific flags: ReadWrite, NonCacheable
	ioDecode16     = 1 // IO(): Decode16
	mem32ReadWrite = 1 // Memory32Fixed: ReadWrite
)

// resWord is a Word address space descriptor (WordBusNumber, WordIO) for
// [min, min+n).
func resWord(space, typeFlags uint8, min, n uint64) []byte {
	b := []byte{resWordAddress, 13, 0, space, addrFlagsProducerFixed, typeFlags}
	b = le.AppendUint16(b, 0) // granularity
	b = le.AppendUint16(b, uint16(min))
	b = le.AppendUint16(b, uint16(min+n-1))
	b = le.AppendUint16(b, 0) // translation offset
	return le.AppendUint16(b, uint16(n))
}

// resDWordMemory is a DWordMemory window [min, min+n).
func resDWordMemory(min, n uint64) []byte {
	b := []byte{resDWordAddress, 23, 0, addrSpaceMemory, addrFlagsProducerFixed, memReadWrite}
	b = le.AppendUint32(b, 0) // granularity
	b = le.AppendUint32(b, uint32(min))
	b = le.AppendUint32(b, uint32(min+n-1))
	b = le.AppendUint32(b, 0) // translation offset
	return le.AppendUint32(b, uint32(n))
}

// resIOFixed is IO(Decode16, port, port, 1, n).
func resIOFixed(port uint16, n uint8) []byte {
	b := []byte{resIO, ioDecode16}
	b = le.AppendUint16(b, port)
	b = le.AppendUint16(b, port)
	return append(b, 1, n)
}

// resMem32Fixed is Memory32Fixed(ReadWrite, base, n).
func resMem32Fixed(base, n uint32) []byte {
	b := []byte{resMemory32Fixed, 9, 0, mem32ReadWrite}
	b = le.AppendUint32(b, base)
	return le.AppendUint32(b, n)
}

// resourceTemplate is ResourceTemplate() {items...}: the descriptors and
// an end tag, as a Buffer. A zero checksum means "treat as summed".
func resourceTemplate(items ...[]byte) []byte {
	var b []byte
	for _, it := range items {
		b = append(b, it...)
	}
	return amlBuffer(append(b, resEndTag, 0))
}
