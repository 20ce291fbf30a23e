package acpi

// A minimal AML encoder (ACPI 6.x §20.2) for the few objects the DSDT holds:
// Name, Package and integer constants.

const (
	amlZeroOp    = 0x00
	amlOneOp     = 0x01
	amlNameOp    = 0x08
	amlBytePfx   = 0x0A
	amlWordPfx   = 0x0B
	amlDWordPfx  = 0x0C
	amlQWordPfx  = 0x0E
	amlPackageOp = 0x12
)

// amlName encodes Name(seg, obj); seg is a 4-character NameSeg such as "_S5_".
func amlName(seg string, obj []byte) []byte {
	b := append([]byte{amlNameOp}, seg[:4]...)
	return append(b, obj...)
}

// amlPackage encodes Package(n) {elems...}.
func amlPackage(elems ...[]byte) []byte {
	body := []byte{byte(len(elems))} // NumElements
	for _, e := range elems {
		body = append(body, e...)
	}
	return append(append([]byte{amlPackageOp}, amlPkgLength(len(body))...), body...)
}

// amlInt encodes an integer constant in its shortest form.
func amlInt(v uint64) []byte {
	switch {
	case v == 0:
		return []byte{amlZeroOp}
	case v == 1:
		return []byte{amlOneOp}
	case v <= 0xFF:
		return []byte{amlBytePfx, byte(v)}
	case v <= 0xFFFF:
		return le.AppendUint16([]byte{amlWordPfx}, uint16(v))
	case v <= 0xFFFFFFFF:
		return le.AppendUint32([]byte{amlDWordPfx}, uint32(v))
	}
	return le.AppendUint64([]byte{amlQWordPfx}, v)
}

// amlPkgLength encodes a PkgLength for n bytes following it; the encoded
// value counts the PkgLength bytes themselves.
func amlPkgLength(n int) []byte {
	if n+1 < 1<<6 {
		return []byte{byte(n + 1)}
	}
	for extra := 1; extra <= 3; extra++ {
		total := n + 1 + extra
		if total < 1<<(4+8*extra) {
			b := []byte{byte(extra<<6 | total&0xF)}
			for i := 0; i < extra; i++ {
				b = append(b, byte(total>>(4+8*i)))
			}
			return b
		}
	}
	panic("acpi: AML package longer than 2^28 bytes")
}

// Opcodes and name prefixes for the PCI host bridge's objects (ACPI 6.x
// §20.2.5).
const (
	amlScopeOp  = 0x10
	amlBufferOp = 0x11
	amlExtOpPfx = 0x5B
	amlDeviceOp = 0x82 // after amlExtOpPfx
)

// amlScope encodes Scope(seg) {terms...}, seg a NameSeg such as "_SB_". At
// a table's top level that is \seg: iasl writes Scope(\_SB) so, without
// the root prefix.
func amlScope(seg string, terms ...[]byte) []byte {
	body := []byte(seg[:4])
	for _, t := range terms {
		body = append(body, t...)
	}
	return append(append([]byte{amlScopeOp}, amlPkgLength(len(body))...), body...)
}

// amlDevice encodes Device(seg) {terms...}.
func amlDevice(seg string, terms ...[]byte) []byte {
	body := []byte(seg[:4])
	for _, t := range terms {
		body = append(body, t...)
	}
	return append(append([]byte{amlExtOpPfx, amlDeviceOp}, amlPkgLength(len(body))...), body...)
}

// amlBuffer encodes Buffer() {bytes}.
func amlBuffer(b []byte) []byte {
	body := append(amlInt(uint64(len(b))), b...)
	return append(append([]byte{amlBufferOp}, amlPkgLength(len(body))...), body...)
}

// eisaID compresses a 7-character PNP ID such as "PNP0A08" into the 32-bit
// integer ASL's EisaId() makes (ACPI 6.x §19.6.35): three letters of 5 bits
// and four hex digits, stored big-endian.
func eisaID(id string) uint64 {
	c := func(i int) uint16 { return uint16(id[i]-'@') & 0x1F }
	vendor := c(0)<<10 | c(1)<<5 | c(2)
	hex := func(i int) byte {
		switch d := id[i]; {
		case d >= '0' && d <= '9':
			return d - '0'
		case d >= 'A' && d <= 'F':
			return d - 'A' + 10
		}
		return 0
	}
	product := uint16(hex(3))<<12 | uint16(hex(4))<<8 | uint16(hex(5))<<4 | uint16(hex(6))
	b := []byte{byte(vendor >> 8), byte(vendor), byte(product >> 8), byte(product)}
	return uint64(le.Uint32(b))
}
