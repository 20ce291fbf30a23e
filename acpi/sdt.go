package acpi

import "encoding/binary"

var le = binary.LittleEndian

// Fields every system description table header carries (ACPI 6.x §5.2.6).
const (
	headerLen   = 36
	oemTableID  = "GOVMM   " // 8 bytes
	creatorID   = "GOVM"
	creatorRev  = 1
	oemRevision = 1
)

// header returns the 36-byte header of a table; finish fills its length and
// checksum once the body has been appended.
func header(sig string, rev uint8, oemID string) []byte {
	b := make([]byte, headerLen)
	copy(b[0:4], sig)
	b[8] = rev
	copy(b[10:16], oemID)
	copy(b[16:24], oemTableID)
	le.PutUint32(b[24:], oemRevision)
	copy(b[28:32], creatorID)
	le.PutUint32(b[32:], creatorRev)
	return b
}

// finish sets the Length field and the Checksum byte (offset 9) so that the
// whole table sums to zero.
func finish(t []byte) []byte {
	le.PutUint32(t[4:], uint32(len(t)))
	t[9] = 0
	t[9] = -sum(t)
	return t
}

// sum is the 8-bit sum of b; a table is valid when the sum over its Length
// bytes is 0.
func sum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return s
}

// Generic Address Structure (ACPI 6.x §5.2.3.2) address spaces and access
// sizes.
const (
	spaceSystemIO = 1
	accessAny     = 0
	accessByte    = 1
)

// putGAS writes a 12-byte Generic Address Structure at b[0:12].
func putGAS(b []byte, space, bitWidth, bitOffset, access uint8, addr uint64) {
	b[0], b[1], b[2], b[3] = space, bitWidth, bitOffset, access
	le.PutUint64(b[4:], addr)
}
