package loader

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// xzbcj.go reads the .xz container (the .xz file format, version 1.0.4)
// as far as Linux's kernels need: KERNEL_XZ payloads are made by
// scripts/xz_wrap.sh, `xz --check=crc32 --x86 --lzma2=,dict=32MiB`, whose
// x86 BCJ filter github.com/ulikunitz/xz does not take. Filter chains
// accepted: [LZMA2] and [x86 BCJ, LZMA2]; checks: none, CRC32, CRC64 and
// SHA-256, all verified, like the block header, index and footer CRC32s.
// The LZMA2 chunks are decoded by ulikunitz's lzma.Reader2, the BCJ filter
// by bcjX86Decode below. Only the first stream is read: a kernel payload
// ends with a 4-byte size word (size_append) that is not xz.

var xzMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0}

const (
	xzFilterX86   = 0x04
	xzFilterLZMA2 = 0x21

	xzCheckNone   = 0x00
	xzCheckCRC32  = 0x01
	xzCheckCRC64  = 0x04
	xzCheckSHA256 = 0x0A
)

var crc64Table = crc64.MakeTable(crc64.ECMA)

// xzDecode decompresses the first .xz stream of p, refusing an output
// longer than limit bytes.
func xzDecode(p []byte, limit int) ([]byte, error) {
	le := binary.LittleEndian
	if len(p) < 12 || !bytes.Equal(p[:6], xzMagic) {
		return nil, errors.New("xz: no stream header")
	}
	flags := p[6:8]
	if crc32.ChecksumIEEE(flags) != le.Uint32(p[8:]) {
		return nil, errors.New("xz: stream header CRC32 mismatch (data corrupt)")
	}
	if flags[0] != 0 || flags[1]&0xF0 != 0 {
		return nil, unsupported(fmt.Sprintf("xz with reserved stream flags % x", flags))
	}
	check := flags[1]
	var checkLen int
	switch check {
	case xzCheckNone:
	case xzCheckCRC32:
		checkLen = 4
	case xzCheckCRC64:
		checkLen = 8
	case xzCheckSHA256:
		checkLen = 32
	default:
		return nil, unsupported(fmt.Sprintf("xz with check type %#x", check))
	}

	type record struct{ unpadded, size uint64 }
	var records []record
	var out bytes.Buffer
	pos := 12
	for nb := 0; ; nb++ {
		if pos >= len(p) {
			return nil, errors.New("xz: truncated before the index")
		}
		if p[pos] == 0 { // index indicator
			break
		}
		b, err := parseXZBlockHeader(p[pos:], nb)
		if err != nil {
			return nil, err
		}
		pos += b.hdrLen
		data := bytes.NewReader(p[pos:])
		// The dictionary need not be larger than the output (no match
		// reaches further back): at most limit bytes, and at most 2 MiB
		// per LZMA2 chunk of at least 6 bytes.
		dictCap := min(int64(b.dictSize), int64(limit), int64(len(p)-pos)/6*(2<<20)+(2<<20))
		if b.uncompressed >= 0 {
			dictCap = min(dictCap, b.uncompressed)
		}
		r2, err := lzma.Reader2Config{DictCap: int(max(dictCap, lzma.MinDictCap))}.NewReader2(data)
		if err != nil {
			return nil, fmt.Errorf("xz: block %d: %w", nb, err)
		}
		start := out.Len()
		if _, err := out.ReadFrom(io.LimitReader(r2, int64(limit-start)+1)); err != nil {
			return nil, fmt.Errorf("xz: block %d: %w", nb, err)
		}
		if out.Len() > limit {
			if limit >= 1<<20 {
				return nil, fmt.Errorf("xz: output larger than %d MiB", limit>>20)
			}
			return nil, fmt.Errorf("xz: output larger than %d bytes", limit)
		}
		if !r2.EOS() {
			return nil, fmt.Errorf("xz: block %d: LZMA2 data ends without its end marker", nb)
		}
		compressed := len(p) - pos - data.Len()
		size := int64(out.Len() - start)
		if b.compressed >= 0 && b.compressed != int64(compressed) || b.uncompressed >= 0 && b.uncompressed != size {
			return nil, fmt.Errorf("xz: block %d: sizes differ from its header's", nb)
		}
		pos += compressed
		for pad := compressed; (b.hdrLen+pad)%4 != 0; pad++ {
			if pos >= len(p) || p[pos] != 0 {
				return nil, fmt.Errorf("xz: block %d: bad block padding", nb)
			}
			pos++
		}
		block := out.Bytes()[start:]
		if b.bcj {
			bcjX86Decode(block, b.bcjStart)
		}
		if pos+checkLen > len(p) {
			return nil, fmt.Errorf("xz: block %d: truncated check", nb)
		}
		if err := xzVerify(check, block, p[pos:pos+checkLen]); err != nil {
			return nil, fmt.Errorf("xz: block %d: %w", nb, err)
		}
		pos += checkLen
		records = append(records, record{uint64(b.hdrLen + compressed + checkLen), uint64(size)})
	}

	// Index: indicator, record count, records, padding, CRC32.
	idx := pos
	pos++
	n, k, err := xzVarint(p[pos:])
	if err != nil {
		return nil, fmt.Errorf("xz: index: %w", err)
	}
	pos += k
	if n != uint64(len(records)) {
		return nil, fmt.Errorf("xz: index lists %d blocks, the stream has %d", n, len(records))
	}
	for i, rec := range records {
		var got [2]uint64
		for j := range got {
			v, k, err := xzVarint(p[pos:])
			if err != nil {
				return nil, fmt.Errorf("xz: index: %w", err)
			}
			got[j], pos = v, pos+k
		}
		if got != [2]uint64{rec.unpadded, rec.size} {
			return nil, fmt.Errorf("xz: index record %d does not match block %d", i, i)
		}
	}
	for ; (pos-idx)%4 != 0; pos++ {
		if pos >= len(p) || p[pos] != 0 {
			return nil, errors.New("xz: bad index padding")
		}
	}
	if pos+4+12 > len(p) {
		return nil, errors.New("xz: truncated index or stream footer")
	}
	if crc32.ChecksumIEEE(p[idx:pos]) != le.Uint32(p[pos:]) {
		return nil, errors.New("xz: index CRC32 mismatch (data corrupt)")
	}
	pos += 4
	indexLen := pos - idx

	// Stream footer: CRC32, backward size, stream flags, "YZ".
	f := p[pos : pos+12]
	if crc32.ChecksumIEEE(f[4:10]) != le.Uint32(f) {
		return nil, errors.New("xz: stream footer CRC32 mismatch (data corrupt)")
	}
	if (int(le.Uint32(f[4:]))+1)*4 != indexLen || !bytes.Equal(f[8:10], flags) || f[10] != 'Y' || f[11] != 'Z' {
		return nil, errors.New("xz: stream footer does not match its header and index")
	}
	return out.Bytes(), nil
}

// xzBlock is what a block header says.
type xzBlock struct {
	hdrLen                   int
	compressed, uncompressed int64 // -1: not given
	bcj                      bool
	bcjStart                 uint32
	dictSize                 uint32
}

// parseXZBlockHeader reads the block header at the start of p.
func parseXZBlockHeader(p []byte, nb int) (xzBlock, error) {
	b := xzBlock{hdrLen: (int(p[0]) + 1) * 4, compressed: -1, uncompressed: -1}
	if b.hdrLen > len(p) {
		return b, fmt.Errorf("xz: block %d: truncated header", nb)
	}
	h := p[:b.hdrLen]
	if crc32.ChecksumIEEE(h[:b.hdrLen-4]) != binary.LittleEndian.Uint32(h[b.hdrLen-4:]) {
		return b, fmt.Errorf("xz: block %d: header CRC32 mismatch (data corrupt)", nb)
	}
	h = h[:b.hdrLen-4]
	flags := h[1]
	if flags&0x3C != 0 {
		return b, unsupported(fmt.Sprintf("xz with reserved block flags %#x", flags))
	}
	pos := 2
	field := func() (int64, error) {
		v, k, err := xzVarint(h[pos:])
		if err != nil || v > 1<<62 {
			return 0, fmt.Errorf("xz: block %d: bad header field", nb)
		}
		pos += k
		return int64(v), nil
	}
	var err error
	if flags&0x40 != 0 {
		if b.compressed, err = field(); err != nil || b.compressed == 0 {
			return b, fmt.Errorf("xz: block %d: bad compressed size", nb)
		}
	}
	if flags&0x80 != 0 {
		if b.uncompressed, err = field(); err != nil {
			return b, err
		}
	}
	var ids []uint64
	var props [][]byte
	for range int(flags&3) + 1 {
		id, err := field()
		if err != nil {
			return b, err
		}
		n, err := field()
		if err != nil {
			return b, err
		}
		if n > int64(len(h)-pos) {
			return b, fmt.Errorf("xz: block %d: filter properties overrun the header", nb)
		}
		ids = append(ids, uint64(id))
		props = append(props, h[pos:pos+int(n)])
		pos += int(n)
	}
	for _, c := range h[pos:] {
		if c != 0 {
			return b, fmt.Errorf("xz: block %d: bad header padding", nb)
		}
	}
	last := len(ids) - 1
	switch {
	case len(ids) == 1 && ids[0] == xzFilterLZMA2:
	case len(ids) == 2 && ids[0] == xzFilterX86 && ids[1] == xzFilterLZMA2:
		switch len(props[0]) {
		case 0:
		case 4:
			b.bcjStart = binary.LittleEndian.Uint32(props[0])
		default:
			return b, fmt.Errorf("xz: block %d: x86 BCJ properties of %d bytes", nb, len(props[0]))
		}
		b.bcj = true
	default:
		return b, unsupported(fmt.Sprintf("xz with filter chain %#x (not LZMA2 alone or after x86 BCJ)", ids))
	}
	if len(props[last]) != 1 || props[last][0] > 40 {
		return b, fmt.Errorf("xz: block %d: bad LZMA2 properties", nb)
	}
	if d := props[last][0]; d == 40 {
		b.dictSize = 0xFFFFFFFF
	} else {
		b.dictSize = (2 | uint32(d)&1) << (d/2 + 11)
	}
	return b, nil
}

// xzVarint reads an xz multibyte integer: 7 bits a byte, least significant
// first, at most 9 bytes, no needless trailing zero byte.
func xzVarint(p []byte) (uint64, int, error) {
	var v uint64
	for i := 0; i < 9 && i < len(p); i++ {
		v |= uint64(p[i]&0x7F) << (7 * i)
		if p[i]&0x80 == 0 {
			if i > 0 && p[i] == 0 {
				return 0, 0, errors.New("bad integer")
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, errors.New("bad or truncated integer")
}

// xzVerify checks a block's uncompressed data against its check field.
func xzVerify(check byte, data, want []byte) error {
	le := binary.LittleEndian
	var ok bool
	name := ""
	switch check {
	case xzCheckNone:
		return nil
	case xzCheckCRC32:
		name, ok = "CRC32", crc32.ChecksumIEEE(data) == le.Uint32(want)
	case xzCheckCRC64:
		name, ok = "CRC64", crc64.Checksum(data, crc64Table) == le.Uint64(want)
	case xzCheckSHA256:
		sum := sha256.Sum256(data)
		name, ok = "SHA-256", bytes.Equal(sum[:], want)
	}
	if !ok {
		return fmt.Errorf("%s mismatch (data corrupt)", name)
	}
	return nil
}

// bcjX86Decode undoes, in place, the x86 branch converter of xz's BCJ
// filters (xz's simple/x86.c, Igor Pavlov's algorithm from 7-Zip): the
// encoder turned the relative 32-bit targets of CALL (E8) and JMP (E9)
// whose top byte is 00 or FF into absolute ones, so that repeated calls to
// one function compress alike; decoding subtracts the position again.
// start is the filter's start offset (its property, usually 0). The whole
// block is passed at once, so the last four bytes, which the filter never
// converts, need no carrying over.
func bcjX86Decode(buf []byte, start uint32) {
	// For the E8/E9 bytes seen among the previous three, prevMask's bits
	// (bit i: one i+1 bytes back) tell whether this one may be an opcode
	// or lies inside an earlier candidate's operand.
	allowed := [8]bool{true, true, true, false, true, false, false, false}
	bitNum := [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
	msByte := func(b byte) bool { return b == 0x00 || b == 0xFF }
	le := binary.LittleEndian
	var prevMask uint32
	prevPos := -1
	for i := 0; i < len(buf)-4; i++ {
		if buf[i]&0xFE != 0xE8 {
			continue
		}
		if d := i - prevPos; d > 3 {
			prevMask = 0
		} else {
			prevMask = prevMask << (d - 1) & 7
			if prevMask != 0 && (!allowed[prevMask] || msByte(buf[i+4-int(bitNum[prevMask])])) {
				prevPos = i
				prevMask = prevMask<<1 | 1
				continue
			}
		}
		prevPos = i
		if !msByte(buf[i+4]) {
			prevMask = prevMask<<1 | 1
			continue
		}
		src := le.Uint32(buf[i+1:])
		var dest uint32
		for {
			dest = src - (start + uint32(i) + 5)
			if prevMask == 0 {
				break
			}
			j := bitNum[prevMask] * 8
			if !msByte(byte(dest >> (24 - j))) {
				break
			}
			src = dest ^ (1<<(32-j) - 1)
		}
		// Sign-extend bit 24: the converted operand's top byte is 00 or FF.
		dest &= 0x01FFFFFF
		dest |= -(dest & 0x01000000)
		le.PutUint32(buf[i+1:], dest)
		i += 4
	}
}
