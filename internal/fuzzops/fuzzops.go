// Package fuzzops reads a fuzz input as a stream of small numbers, for the
// fuzz targets that drive register interfaces with access sequences
// (vlapic, vioapic, vintremap). A drained input reads as zeros.
package fuzzops

// Reader consumes bytes from B.
type Reader struct{ B []byte }

// New reads b.
func New(b []byte) *Reader { return &Reader{B: b} }

// More reports whether input is left.
func (o *Reader) More() bool { return len(o.B) > 0 }

// U8 takes one byte.
func (o *Reader) U8() uint8 {
	if len(o.B) == 0 {
		return 0
	}
	v := o.B[0]
	o.B = o.B[1:]
	return v
}

// U16 takes two bytes, little-endian.
func (o *Reader) U16() uint16 { return uint16(o.U8()) | uint16(o.U8())<<8 }

// U32 takes four bytes, little-endian.
func (o *Reader) U32() uint32 { return uint32(o.U16()) | uint32(o.U16())<<16 }

// U64 takes eight bytes, little-endian.
func (o *Reader) U64() uint64 { return uint64(o.U32()) | uint64(o.U32())<<32 }
