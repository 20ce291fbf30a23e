package loader

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz"
)

// bzImagePayload returns the uncompressed kernel (an ELF vmlinux) inside a
// bzImage, so that govmm can enter startup_64 directly instead of running
// the decompressor: on an emulating host that saves minutes per boot
// (docs/hosts.md). The payload's format is told by its magic, as the kernel's
// own scripts/extract-vmlinux does.
func bzImagePayload(img []byte) ([]byte, error) {
	le := binary.LittleEndian
	if len(img) < 0x250 || le.Uint16(img[0x206:]) < 0x208 {
		return nil, errors.New("bzImage boot protocol too old to locate its payload")
	}
	setupSects := int(img[0x1F1])
	if setupSects == 0 {
		setupSects = 4
	}
	start := (setupSects+1)*512 + int(le.Uint32(img[0x248:]))
	n := int(le.Uint32(img[0x24C:]))
	if start < 0 || n <= 0 || start+n > len(img) {
		return nil, errors.New("bzImage payload lies outside the image")
	}
	p := img[start : start+n]
	var r io.Reader
	var err error
	switch {
	case bytes.HasPrefix(p, []byte{0x1F, 0x8B}):
		r, err = gzip.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte{0xFD, '7', 'z', 'X', 'Z', 0}):
		r, err = xz.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(p))
		if err == nil {
			defer d.Close()
			r = d
		}
	case bytes.HasPrefix(p, []byte{0x02, 0x21, 0x4C, 0x18}): // LZ4 legacy frames
		r = lz4.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte("BZh")):
		r = bzip2.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte("\x7fELF")):
		return p, nil
	default:
		return nil, fmt.Errorf("bzImage payload has an unknown compression (magic % x)", p[:min(6, len(p))])
	}
	if err != nil {
		return nil, fmt.Errorf("bzImage payload: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, 1<<30))
	// Payloads may carry trailing data (size word, relocations) after the
	// compressed stream; a complete ELF is what matters.
	if len(out) < 64 || !bytes.HasPrefix(out, []byte("\x7fELF")) {
		if err == nil {
			err = errors.New("not an ELF kernel")
		}
		return nil, fmt.Errorf("bzImage payload does not decompress to vmlinux: %w", err)
	}
	return out, nil
}
