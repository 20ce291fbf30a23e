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
