package loader

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// x86Like is an ELF-headed buffer of n bytes shaped like x86 code: runs of
// text and random bytes between CALL (E8) and JMP (E9) instructions whose
// near targets (top byte 00 or FF) the x86 BCJ filter converts, with the
// same targets recurring, as calls to one function do.
func x86Like(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := append(make([]byte, 0, n+64), "\x7fELF\x02\x01\x01"...)
	b = append(b, make([]byte, 57)...)
	targets := make([]uint32, 64)
	for i := range targets {
		targets[i] = rng.Uint32N(1 << 22)
	}
	for len(b) < n {
		switch k := rng.IntN(10); {
		case k < 5: // a call or jump to a recurring target
			op := byte(0xE8 + rng.IntN(2))
			rel := targets[rng.IntN(len(targets))] - uint32(len(b)+5)
			b = binary.LittleEndian.AppendUint32(append(b, op), rel)
		case k < 7:
			b = append(b, "mov rax, [rbp-8]; "...)
		default:
			for range rng.IntN(12) {
				b = append(b, byte(rng.UintN(256)))
			}
		}
	}
	return b[:n]
}

// testCode is a realistic x86-64 input: the start of this test binary.
func testCode(t *testing.T, n int) []byte {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return b[:min(n, len(b))]
}

// compressTool pipes in through a compressor, skipping the test (loudly)
// when the tool is missing.
func compressTool(t *testing.T, in []byte, tool string, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		t.Skipf("SKIP: %s is not installed (apt-get install %s): %s not tested", tool, tool, strings.Join(append([]string{tool}, args...), " "))
	}
	cmd := exec.Command(path, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v: %s", tool, args, err, stderr.String())
	}
	return out
}

func TestBCJX86Vector(t *testing.T) {
	// CALL at 0 with absolute target 0x1005 is relative 0x1000.
	buf := []byte{0xE8, 0x05, 0x10, 0x00, 0x00, 0xE9, 0xFA, 0xFF, 0xFF, 0x00, 0x90, 0x90, 0x90, 0x90}
	bcjX86Decode(buf[:5+4], 0) // too short for the second: left alone
	if want := []byte{0xE8, 0x00, 0x10, 0x00, 0x00, 0xE9, 0xFA, 0xFF, 0xFF}; !bytes.Equal(buf[:9], want) {
		t.Fatalf("got % x, want % x", buf[:9], want)
	}
	// With start offset 0x100: the CALL as above, and a JMP at 5 back by
	// 0x20, absolute 0xEA (-0x20+0x10A), whose relative target is
	// sign-extended from bit 24.
	buf = []byte{0xE8, 0x05, 0x11, 0x00, 0x00, 0xE9, 0xEA, 0x00, 0x00, 0x00, 0x90, 0x90, 0x90, 0x90}
	bcjX86Decode(buf, 0x100)
	if want := []byte{0xE8, 0x00, 0x10, 0x00, 0x00, 0xE9, 0xE0, 0xFF, 0xFF, 0xFF}; !bytes.Equal(buf[:10], want) {
		t.Fatalf("got % x, want % x", buf[:10], want)
	}
	// The inputs have work for the filter.
	for _, in := range [][]byte{x86Like(1<<16, 1), testCode(t, 1<<16)} {
		c := bytes.Clone(in)
		if bcjX86Decode(c, 0); bytes.Equal(c, in) {
			t.Error("x86 BCJ left an x86-like buffer unchanged")
		}
	}
}

// TestXZRoundTrip decodes what xz makes: Linux's own options for
// KERNEL_XZ (scripts/xz_wrap.sh), its xzmisc ones, the other checks, a BCJ
// start offset, several blocks with their sizes in the headers.
func TestXZRoundTrip(t *testing.T) {
	inputs := map[string][]byte{"x86-like": x86Like(160<<10, 2), "test binary": testCode(t, 160<<10), "empty": nil}
	for _, args := range [][]string{
		{"--check=crc32", "--x86", "--lzma2=dict=32MiB"}, // xz_wrap.sh
		{"--check=crc32", "--lzma2=dict=1MiB"},           // xzmisc
		{"--check=crc64", "--x86", "--lzma2=preset=1"},
		{"--check=sha256", "--x86", "--lzma2=preset=1"},
		{"--check=none", "--x86", "--lzma2=preset=0"},
		{"--check=crc32", "--x86=start=4096", "--lzma2=preset=1"},
		{"--check=crc64", "-T2", "--block-size=100KiB", "--x86", "--lzma2=preset=1"},
	} {
		for name, in := range inputs {
			z := compressTool(t, in, "xz", append([]string{"-c"}, args...)...)
			// A kernel payload: the stream, then the size word.
			z = binary.LittleEndian.AppendUint32(z, uint32(len(in)))
			out, err := xzDecode(z, 1<<30)
			if err != nil {
				t.Errorf("xz %v, %s: %v", args, name, err)
			} else if !bytes.Equal(out, in) {
				t.Errorf("xz %v, %s: %d bytes differ from the %d put in", args, name, len(out), len(in))
			}
		}
	}
}

func TestXZCorrupt(t *testing.T) {
	in := x86Like(200<<10, 3)
	for _, c := range []struct {
		check string
		n     int
	}{{"crc32", 4}, {"crc64", 8}, {"sha256", 32}} {
		z := compressTool(t, in, "xz", "-c", "--check="+c.check, "--x86", "--lzma2")
		// The block's check sits before the index (12 bytes for one
		// block at these sizes) and the 12-byte footer.
		idx := bytes.LastIndex(z[:len(z)-12], []byte{0, 1})
		if idx < 0 {
			t.Fatal("no index found")
		}
		bad := bytes.Clone(z)
		bad[idx-c.n] ^= 0x40
		_, err := xzDecode(bad, 1<<30)
		name := map[string]string{"crc32": "CRC32", "crc64": "CRC64", "sha256": "SHA-256"}[c.check]
		if err == nil || !strings.Contains(err.Error(), name+" mismatch") || errors.Is(err, ErrUnsupportedPayload) {
			t.Errorf("%s: corrupt check gave %v", c.check, err)
		}
		// Through the loader, one line that says what went wrong.
		_, err = bzImagePayload(fakeBzImage(bad))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "mismatch (data corrupt)") {
			t.Errorf("%s: bzImage with a corrupt check gave %q", c.check, err)
		}
	}
	z := compressTool(t, in, "xz", "-c", "--check=crc32", "--x86", "--lzma2")
	for _, off := range []int{7, 13, 20, len(z) / 2, len(z) - 20, len(z) - 3} {
		bad := bytes.Clone(z)
		bad[off] ^= 0x01
		if _, err := xzDecode(bad, 1<<30); err == nil {
			t.Errorf("byte %d of %d flipped: no error", off, len(z))
		}
	}
	for _, n := range []int{0, 11, 12, 40, len(z) / 2, len(z) - 13, len(z) - 1} {
		if _, err := xzDecode(z[:n], 1<<30); err == nil {
			t.Errorf("truncated to %d of %d bytes: no error", n, len(z))
		}
	}
	if _, err := xzDecode(z, 100<<10); err == nil {
		t.Error("over the limit: no error")
	}
	z = compressTool(t, in, "xz", "-c", "--check=crc32", "--x86", "--lzma2=dict=64KiB")
	if _, err := xzDecode(z, 100<<10); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("over the limit: %v", err)
	}
}

// TestXZUnsupported: a filter chain govmm does not take is reported as an
// unsupported payload (the bzImage's own decompressor can still run it).
func TestXZUnsupported(t *testing.T) {
	z := compressTool(t, x86Like(10<<10, 4), "xz", "-c", "--check=crc32", "--delta=dist=4", "--lzma2")
	_, err := bzImagePayload(fakeBzImage(z))
	if !errors.Is(err, ErrUnsupportedPayload) || !strings.Contains(err.Error(), "filter chain [0x3 0x21]") {
		t.Errorf("delta filter: %v", err)
	}
}

// xzSeed is `xz --check=crc32 --x86 --lzma2` of a few bytes.
const xzSeed = "\xfd7zXZ\x00\x00\x01i\"\xde6\x02\x01\x04\x00!\x01\x16\x00\r\x865\x1f\xe0\x00&\x00!]\x00?\x91E\x84pj\x15\xe1x]5\x86\x10\x01}\r\xec3\xbfs\xd3\x86\xe4g1\xd2\xe4\x16\x16<\xa4\x00\x00\x00\x00\x00\x00\xae\xa2\x8b2\x00\x019'\xfa\x8d\x08\x8b\x90B\x99\r\x01\x00\x00\x00\x00\x01YZ"

func TestXZSeed(t *testing.T) {
	out, err := xzDecode([]byte(xzSeed), 1<<20)
	if err != nil || !bytes.HasPrefix(out, []byte("\x7fELF\xe8\x10\x00\x00\x00call")) {
		t.Fatalf("%q, %v", out, err)
	}
}

// TestXZGarbage flips bytes of a valid stream: errors, never a panic.
func TestXZGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 2000; i++ {
		b := []byte(xzSeed)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.UintN(256))
		}
		xzDecode(b[:rng.IntN(len(b)+1)], 1<<20)
	}
}

func FuzzXZDecode(f *testing.F) {
	f.Add([]byte(xzSeed))
	f.Add([]byte(xzSeed[:12] + "\x00\x00\x00\x00"))
	f.Add([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\x03\x01\x04\x04\x00\x10\x00\x00!\x01\x16\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := xzDecode(b, 1<<22)
		if err == nil && len(out) > 1<<22 {
			t.Fatalf("%d bytes out, over the limit", len(out))
		}
	})
}
