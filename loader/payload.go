package loader

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/ulikunitz/xz/lzma"
)

// bzImagePayload returns the uncompressed kernel (an ELF vmlinux) inside a
// bzImage, so that govmm can enter startup_64 directly instead of running
// the decompressor: on an emulating host that saves minutes per boot
// (docs/hosts.md). The payload's format is told by its magic, as the kernel's
// own scripts/extract-vmlinux does: every KERNEL_* choice of Linux's
// arch/x86/boot/compressed/Makefile (gzip, bzip2, lzma, xz with the x86 BCJ
// filter, lz4 legacy frames, zstd) but LZO, for which no Go decoder is at
// hand; an LZO or unknown payload fails with ErrUnsupportedPayload.
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
	var name string
	strict := false // a decoding error fails even after a complete ELF
	switch {
	case bytes.HasPrefix(p, []byte{0x1F, 0x8B}):
		name = "gzip"
		var z *gzip.Reader
		if z, err = gzip.NewReader(bytes.NewReader(p)); err == nil {
			z.Multistream(false) // the size word after the member is not gzip
			r, strict = z, true
		}
	case bytes.HasPrefix(p, xzMagic):
		out, err := xzDecode(p, payloadLimit)
		if errors.Is(err, ErrUnsupportedPayload) {
			return nil, err
		}
		return vmlinuxOut("xz", out, err)
	case bytes.HasPrefix(p, []byte{0x5D, 0, 0}): // legacy .lzma: lc=3 lp=0 pb=2, then the dictionary size
		name = "lzma"
		var l *lzma.Reader
		if l, err = (lzma.ReaderConfig{DictCap: payloadLimit}).NewReader(bytes.NewReader(p)); err == nil {
			r, strict = l, true // stops at its end marker or size
		}
	case bytes.HasPrefix(p, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		name = "zstd"
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(p))
		if err == nil {
			defer d.Close()
			r = d
		}
	case bytes.HasPrefix(p, []byte{0x02, 0x21, 0x4C, 0x18}): // LZ4 legacy frames
		name, r = "lz4", lz4.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte("BZh")):
		name, r = "bzip2", bzip2.NewReader(bytes.NewReader(p))
	case bytes.HasPrefix(p, []byte{0x89, 'L', 'Z', 'O', 0, '\r', '\n', 0x1A, '\n'}):
		return nil, unsupported("LZO-compressed (lzop)")
	case bytes.HasPrefix(p, []byte("\x7fELF")):
		return p, nil
	default:
		return nil, unsupported(fmt.Sprintf("of an unknown compression (magic % x)", p[:min(6, len(p))]))
	}
	if err != nil {
		return nil, fmt.Errorf("bzImage payload (%s): %w", name, err)
	}
	out, err := io.ReadAll(io.LimitReader(r, payloadLimit))
	// Payloads carry a size word (size_append) after the compressed
	// stream, which some readers take for the start of another one: past a
	// complete ELF only a failed check is an error, unless the reader is
	// known to stop at the stream's end.
	if err != nil && !strict && !checkFailed(err) && isELF(out) {
		err = nil
	}
	return vmlinuxOut(name, out, err)
}

// payloadLimit bounds a decompressed payload (and an LZMA dictionary).
const payloadLimit = 1 << 30

func isELF(b []byte) bool { return len(b) >= 64 && bytes.HasPrefix(b, []byte("\x7fELF")) }

// vmlinuxOut returns a payload decompressed from format name if it is an
// ELF kernel.
func vmlinuxOut(name string, out []byte, err error) ([]byte, error) {
	if err == nil && !isELF(out) {
		err = errors.New("not an ELF kernel")
	}
	if err != nil {
		return nil, fmt.Errorf("bzImage payload (%s) does not decompress to vmlinux: %w", name, err)
	}
	return out, nil
}

// checkFailed tells a decoder's checksum errors.
func checkFailed(err error) bool {
	var se bzip2.StructuralError
	return errors.Is(err, zstd.ErrCRCMismatch) || errors.As(err, &se) && strings.Contains(string(se), "checksum")
}

// ErrUnsupportedPayload is matched (errors.Is) by the error of a bzImage
// whose payload is in a format, or uses a feature of one, that govmm cannot
// decompress (LZO, an unknown magic, an xz filter other than x86 BCJ and
// LZMA2): its own decompressor can still run it. A corrupt payload is
// another error.
var ErrUnsupportedPayload = errors.New("unsupported bzImage payload")

type unsupportedError string

func (e unsupportedError) Error() string {
	return "bzImage payload is " + string(e) + ", which govmm cannot decompress"
}

func (unsupportedError) Is(target error) bool { return target == ErrUnsupportedPayload }

func unsupported(what string) error { return unsupportedError(what) }
