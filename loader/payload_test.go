package loader

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBzImage wraps payload like a bzImage: 4 setup sectors after the boot
// sector, protocol 2.15, payload at the start of the protected-mode part.
func fakeBzImage(payload []byte) []byte {
	img := make([]byte, 5*512)
	le := binary.LittleEndian
	img[0x1F1] = 4
	img[0x201] = 0x6A
	le.PutUint32(img[0x202:], hdrSMagic)
	le.PutUint16(img[0x206:], 0x20F)
	le.PutUint32(img[0x248:], 0)
	le.PutUint32(img[0x24C:], uint32(len(payload)))
	return append(img, payload...)
}

func TestBzImagePayloadGzip(t *testing.T) {
	elf := append([]byte("\x7fELF"), bytes.Repeat([]byte{7}, 100)...)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(elf)
	w.Close()
	got, err := bzImagePayload(fakeBzImage(z.Bytes()))
	if err != nil || !bytes.Equal(got, elf) {
		t.Fatalf("payload %d bytes, %v", len(got), err)
	}
	if _, err := bzImagePayload(fakeBzImage([]byte("garbage!"))); err == nil {
		t.Error("unknown compression accepted")
	}
}

// withSize appends Linux's size_append word (the uncompressed size, LE32),
// which follows every compressed payload in a bzImage.
func withSize(z []byte, n int) []byte {
	return binary.LittleEndian.AppendUint32(bytes.Clone(z), uint32(n))
}

// TestBzImagePayloadFormats round-trips a payload through each KERNEL_*
// compressor, run as Linux's scripts/Makefile.lib runs it, skipping (with
// a message) those not installed. LZO: see TestBzImagePayloadLZO.
func TestBzImagePayloadFormats(t *testing.T) {
	elf := x86Like(256<<10, 7)
	for _, c := range []struct {
		name string
		tool string
		args []string
	}{
		{"gzip", "gzip", []string{"-n", "-f", "-9"}},
		{"bzip2", "bzip2", []string{"-9"}},
		{"lzma", "xz", []string{"--format=lzma", "-9"}}, // $(LZMA) -9
		{"xz", "xz", []string{"--check=crc32", "--x86", "--lzma2=,dict=32MiB"}},
		{"lz4", "lz4", []string{"-l", "-9", "-", "-"}},
		{"zstd", "zstd", []string{"-19", "-q", "-c"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			z := compressTool(t, elf, c.tool, c.args...)
			got, err := bzImagePayload(fakeBzImage(withSize(z, len(elf))))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, elf) {
				t.Fatalf("%d bytes differ from the %d put in", len(got), len(elf))
			}
		})
	}
}

// TestBzImagePayloadCorrupt: a payload whose check fails is an error of
// one line, not a kernel, and not an unsupported format either.
func TestBzImagePayloadCorrupt(t *testing.T) {
	elf := x86Like(64<<10, 8)
	for _, c := range []struct {
		name, tool string
		args       []string
		off        int // from the end of the compressed stream
	}{
		{"gzip", "gzip", []string{"-n", "-9"}, 8},        // the member's CRC32
		{"bzip2", "bzip2", []string{"-9"}, 2},            // the stream's combined CRC
		{"zstd", "zstd", []string{"-19", "-q", "-c"}, 1}, // the frame's content checksum
		{"xz", "xz", []string{"--check=crc32", "--x86", "--lzma2"}, 12 + 12 + 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			z := compressTool(t, elf, c.tool, c.args...)
			z[len(z)-c.off] ^= 0x10
			_, err := bzImagePayload(fakeBzImage(withSize(z, len(elf))))
			if err == nil || strings.Contains(err.Error(), "\n") || errors.Is(err, ErrUnsupportedPayload) {
				t.Fatalf("corrupt %s payload: %v", c.name, err)
			}
			t.Log(err)
		})
	}
}

// TestBzImagePayloadLZO: lzop's payloads are reported as unsupported, so
// that govmm runs the bzImage's own decompressor (vmm).
func TestBzImagePayloadLZO(t *testing.T) {
	lzo := append([]byte("\x89LZO\x00\r\n\x1a\n"), make([]byte, 64)...)
	for _, p := range [][]byte{lzo, []byte("garbage!")} {
		_, err := bzImagePayload(fakeBzImage(p))
		if !errors.Is(err, ErrUnsupportedPayload) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", p[:8], err)
		}
	}
	if _, err := bzImagePayload(fakeBzImage(lzo)); err == nil || !strings.Contains(err.Error(), "LZO") {
		t.Errorf("LZO payload: %v", err)
	}
}

// TestBzImagePayloadDebian decompresses Debian's cloud kernel (LZ4 legacy
// frames) when the Makefile has fetched it, and the bzImages listed in
// $GOVMM_TEST_BZIMAGES (colon-separated), such as Debian's default
// linux-image-amd64 (xz with the x86 BCJ filter), when given.
func TestBzImagePayloadDebian(t *testing.T) {
	dir := os.Getenv("GOVMM_CACHE")
	if dir == "" {
		h, _ := os.UserHomeDir()
		dir = filepath.Join(h, ".cache", "govmm")
	}
	paths := []string{filepath.Join(dir, "debian-kernel", "vmlinuz")}
	if l := os.Getenv("GOVMM_TEST_BZIMAGES"); l != "" {
		paths = append(paths, filepath.SplitList(l)...)
	}
	for i, path := range paths {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			img, err := os.ReadFile(path)
			if err != nil && i == 0 {
				t.Skipf("SKIP: Debian's kernel not fetched (make debian-kernel fetches it; make test does): %v", err)
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := bzImagePayload(img)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			f, err := elf.NewFile(bytes.NewReader(out))
			if err != nil || f.Machine != elf.EM_X86_64 || len(f.Progs) == 0 {
				t.Fatalf("%s: payload of %d bytes is no x86-64 ELF kernel: %v", path, len(out), err)
			}
			if len(out) < len(img) {
				t.Errorf("%s: vmlinux of %d bytes is smaller than the bzImage (%d)", path, len(out), len(img))
			}
			t.Logf("%s: %d-byte x86-64 ELF vmlinux", path, len(out))
		})
	}
}
