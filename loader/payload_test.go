package loader

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
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

// TestBzImagePayloadDebian decompresses Debian's cloud kernel (LZ4 legacy
// frames) when the Makefile has fetched it.
func TestBzImagePayloadDebian(t *testing.T) {
	dir := os.Getenv("GOVMM_CACHE")
	if dir == "" {
		h, _ := os.UserHomeDir()
		dir = filepath.Join(h, ".cache", "govmm")
	}
	img, err := os.ReadFile(filepath.Join(dir, "debian-kernel", "vmlinuz"))
	if err != nil {
		t.Skipf("SKIP: Debian's kernel not fetched (make debian-kernel): %v", err)
	}
	out, err := bzImagePayload(img)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < len(img) {
		t.Errorf("vmlinux of %d bytes is smaller than the bzImage (%d)", len(out), len(img))
	}
}
