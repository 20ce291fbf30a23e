package xstate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/govmm/govmm/internal/hostcpu"
)

// skylakeCPUID is CPUID leaf 0xD as KVM reports it on the hosts govmm
// runs on today (x87, SSE, AVX, AVX-512 and PKRU; no XSAVEC/XSAVES offered
// to the guest).
func skylakeCPUID(leaf, sub uint32) (uint32, uint32, uint32, uint32) {
	if leaf != 0xD {
		return 0, 0, 0, 0
	}
	switch sub {
	case 0:
		return 0x2e7, 0xa88, 0xa88, 0
	case 1:
		return 0xf, 0, 0, 0 // XSAVEOPT, XSAVEC, XGETBV1, XSAVES for the model tests
	case 2:
		return 0x100, 0x240, 0, 0
	case 5:
		return 0x40, 0x440, 0, 0
	case 6:
		return 0x200, 0x480, 0, 0
	case 7:
		return 0x400, 0x680, 0, 0
	case 9:
		return 0x8, 0xa80, 0, 0
	}
	return 0, 0, 0, 0
}

func TestLayoutSizes(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	if l.UserMask != 0x2e7 || !l.XSAVEC || !l.XSAVES {
		t.Fatalf("layout %+v", l)
	}
	// CPUID.(0xD,0).EBX for XCR0 = 0x2e7, and Linux's "context size is
	// 2440 bytes, using 'compacted' format" for the same features.
	if got := l.StandardSize(0x2e7); got != 0xa88 {
		t.Errorf("standard size = %#x, want 0xa88", got)
	}
	offs, size := l.CompactedOffsets(0x2e7 | compactedBit)
	if size != 2440 {
		t.Errorf("compacted size = %d, want 2440", size)
	}
	want := map[int]uint32{2: 576, 5: 832, 6: 896, 7: 1408, 9: 2432}
	for i, w := range want {
		if offs[i] != w {
			t.Errorf("compacted offset of component %d = %d, want %d", i, offs[i], w)
		}
	}
}

func TestCompactedAlignment(t *testing.T) {
	l := NewLayout(func(leaf, sub uint32) (uint32, uint32, uint32, uint32) {
		switch sub {
		case 0:
			return 0x0f, 0, 0, 0
		case 2:
			return 0x100, 0x240, 0, 0
		case 3:
			return 0x40, 0x3c0, 0, 0
		}
		return 0, 0, 0, 0
	})
	l.Components[3] = Component{Size: 8, Offset: 0x3c0, Align64: true}
	offs, size := l.CompactedOffsets(X87 | SSE | BNDREGS)
	if offs[3] != 576 || size != 584 {
		t.Errorf("BNDREGS alone at %d (size %d), want 576 (584)", offs[3], size)
	}
	l.Components[2].Size = 0x104 // YMM ending off a 64-byte boundary
	offs, _ = l.CompactedOffsets(X87 | SSE | YMM | BNDREGS)
	if offs[3] != 576+0x140 {
		t.Errorf("aligned component after an unaligned end at %d, want %d", offs[3], 576+0x140)
	}
}

func TestSetXCR0(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	for _, c := range []struct {
		v    uint64
		want Fault
	}{
		{X87, OK}, {X87 | SSE, OK}, {X87 | SSE | YMM, OK}, {0xe7, OK}, {0x2e7, OK},
		{SSE, GP}, {0, GP}, {X87 | YMM, GP}, {X87 | SSE | YMM | OpMask, GP},
		{X87 | SSE | AVX512, GP}, {X87 | BNDREGS, GP}, {X87 | SSE | YMM | 1<<8, GP}, {1 << 63, GP},
	} {
		if got := l.SetXCR0(c.v); got != c.want {
			t.Errorf("XSETBV %#x: %v, want %v", c.v, got, c.want)
		}
	}
}

func TestXGETBV(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	img := make([]byte, 4096)
	binary.LittleEndian.PutUint64(img[HeaderOffset:], X87|YMM|OpMask)
	if v, f := l.XGETBV(0, 0xe7, img); v != 0xe7 || f != OK {
		t.Errorf("XGETBV(0) = %#x %v", v, f)
	}
	if v, f := l.XGETBV(1, 0xe7, img); v != X87|YMM|OpMask || f != OK {
		t.Errorf("XGETBV(1) = %#x %v", v, f)
	}
	if _, f := l.XGETBV(2, 0xe7, img); f != GP {
		t.Errorf("XGETBV(2): %v, want #GP", f)
	}
	l.XGETBV1 = false
	if _, f := l.XGETBV(1, 0xe7, img); f != GP {
		t.Errorf("XGETBV(1) without XGETBV1: %v, want #GP", f)
	}
}

func TestRestoreAreaChecks(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	hdr := func(xstate, xcomp uint64, extra ...int) []byte {
		h := make([]byte, HeaderSize)
		binary.LittleEndian.PutUint64(h, xstate)
		binary.LittleEndian.PutUint64(h[8:], xcomp)
		for _, i := range extra {
			h[i] = 1
		}
		return h
	}
	for _, c := range []struct {
		name    string
		h       []byte
		perm    uint64
		xrstors bool
		want    Fault
		size    uint32
	}{
		{"standard", hdr(0xe7, 0), 0xe7, false, OK, 0xa80},
		{"standard, legacy only", hdr(X87|SSE, 0), 0xe7, false, OK, 576},
		{"standard, XSTATE_BV outside XCR0", hdr(PKRU, 0), 0xe7, false, GP, 0},
		{"standard, bytes 16-23 set", hdr(0, 0, 16), 0xe7, false, GP, 0},
		{"standard, bytes 24-63 ignored", hdr(0, 0, 40), 0xe7, false, OK, 576},
		{"standard under XRSTORS", hdr(0, 0), 0xe7, true, GP, 0},
		{"compacted", hdr(0xe7, 0xe7|compactedBit), 0xe7, false, OK, 2432},
		{"compacted, XCOMP_BV outside XCR0", hdr(0, PKRU|compactedBit), 0xe7, false, GP, 0},
		{"compacted, XSTATE_BV outside XCOMP_BV", hdr(YMM, X87|compactedBit), 0xe7, false, GP, 0},
		{"compacted, reserved header byte", hdr(0, X87|compactedBit, 63), 0xe7, false, GP, 0},
		{"compacted under XRSTORS", hdr(X87, X87|compactedBit), 0xe7, true, OK, 576},
	} {
		size, f := l.RestoreArea(c.h, c.perm, c.xrstors)
		if f != c.want || f == OK && size != c.size {
			t.Errorf("%s: size %d %v, want %d %v", c.name, size, f, c.size, c.want)
		}
	}
	l.XSAVEC = false
	if _, f := l.RestoreArea(hdr(X87, X87|compactedBit), 0xe7, false); f != GP {
		t.Errorf("compacted XRSTOR without XSAVEC: %v, want #GP", f)
	}
}

// randomImage is a standard-format image with every component of mask in
// use and random contents (MXCSR valid).
func randomImage(l *Layout, mask uint64, rng *rand.Rand) []byte {
	img := make([]byte, max(4096, l.StandardSize(mask)))
	for i := range img[:l.StandardSize(mask)] {
		img[i] = byte(rng.Uint32())
	}
	clear(img[HeaderOffset : HeaderOffset+HeaderSize])
	binary.LittleEndian.PutUint32(img[offMXCSR:], 0x1F80|rng.Uint32()&0x3F)
	binary.LittleEndian.PutUint32(img[offMXCSRMask:], 0xFFFF)
	binary.LittleEndian.PutUint64(img[HeaderOffset:], mask)
	return img
}

func apply(area []byte, stores []Store) {
	for _, s := range stores {
		copy(area[s.Off:], s.Data)
	}
}

// A context switch as Linux does it: save task A with one instruction,
// let task B's state take the registers, restore A: A's state is back
// exactly, for every save form and the restore that reads it.
func TestSaveRestoreRoundTrip(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, op := range []SaveOp{XSAVE, XSAVEOPT, XSAVEC, XSAVES} {
		t.Run(fmt.Sprint(op), func(t *testing.T) {
			a := randomImage(&l, 0xe7, rng)
			area := make([]byte, 4096)
			apply(area, l.Save(op, a, 0xe7, 0, true))
			b := randomImage(&l, 0xe7, rng)
			if f := l.Restore(b, area, 0xe7, true); f != OK {
				t.Fatal(f)
			}
			if !bytes.Equal(cut(&l, a, 0xe7), cut(&l, b, 0xe7)) {
				t.Errorf("restored state differs from the saved one at byte %d", firstDiff(cut(&l, a, 0xe7), cut(&l, b, 0xe7)))
			}
		})
	}
}

// cut is what the instructions move of an image: the legacy region's
// x87, MXCSR and XMM bytes (not MXCSR_MASK, which restore never loads),
// XSTATE_BV and the components of mask.
func cut(l *Layout, img []byte, mask uint64) []byte {
	out := append([]byte{}, img[:offMXCSRMask]...)
	out = append(out, img[offST:416]...)
	out = append(out, img[HeaderOffset:HeaderOffset+8]...)
	for i := 2; i < 64; i++ {
		if c := l.Components[i]; mask&(1<<i) != 0 {
			out = append(out, img[c.Offset:c.Offset+c.Size]...)
		}
	}
	return out
}

func TestRestoreInitAndUntouched(t *testing.T) {
	l := NewLayout(skylakeCPUID)
	rng := rand.New(rand.NewPCG(3, 4))
	img := randomImage(&l, 0xe7, rng)
	before := append([]byte{}, img...)
	area := make([]byte, 4096)
	binary.LittleEndian.PutUint32(area[offMXCSR:], mxcsrInit)
	// XSTATE_BV = x87 only: SSE and YMM go to their initial state; the
	// AVX-512 components are outside rfbm and stay.
	binary.LittleEndian.PutUint64(area[HeaderOffset:], X87)
	if f := l.Restore(img, area, X87|SSE|YMM, true); f != OK {
		t.Fatal(f)
	}
	if !zero(img[offXMM:416]) || !zero(img[0x240:0x340]) {
		t.Errorf("SSE and YMM not in their initial state")
	}
	if !bytes.Equal(img[0x440:0xa80], before[0x440:0xa80]) {
		t.Errorf("components outside rfbm changed")
	}
	if got := InUse(img); got != X87|AVX512 {
		t.Errorf("XSTATE_BV after restore = %#x, want %#x", got, X87|AVX512)
	}
	binary.LittleEndian.PutUint32(area[offMXCSR:], 1<<20)
	if f := l.Restore(img, area, X87|SSE, true); f != GP {
		t.Errorf("reserved MXCSR bit: %v, want #GP", f)
	}
}

// The model against the processor: the host runs XSAVE and XSAVEC on the
// same state back to back; the model's XSAVEC from the XSAVE image must be
// byte for byte what the processor stored, and the model's XRSTOR of the
// compacted area must give what the processor's XRSTOR then XSAVE gives.
func TestModelMatchesHostProcessor(t *testing.T) {
	_, _, ecx, _ := hostcpu.CPUID(1, 0)
	a1, _, _, _ := hostcpu.CPUID(0xD, 1)
	if ecx&(1<<27) == 0 || a1&2 == 0 {
		t.Skip("SKIP: the host processor has no XSAVE enabled or no XSAVEC")
	}
	l := NewLayout(hostcpu.CPUID)
	xcr0 := hostcpu.XGETBV0()
	size := l.StandardSize(xcr0)
	std, cmp := aligned(int(size)), aligned(int(size))
	hostcpu.SaveBoth(&std[0], &cmp[0], xcr0)
	image := append(make([]byte, 0, 4096), std...)[:max(int(size), 4096)]
	model := make([]byte, len(cmp))
	stores := l.Save(XSAVEC, image, xcr0, 0, true)
	apply(model, stores)
	_, csize := l.CompactedOffsets(xcr0 & InUse(image))
	for _, s := range stores { // compare only what XSAVEC writes
		if !bytes.Equal(model[s.Off:int(s.Off)+len(s.Data)], cmp[s.Off:int(s.Off)+len(s.Data)]) {
			t.Errorf("XSAVEC model differs from the processor at offset %d (%d bytes; area %d bytes)", s.Off, len(s.Data), csize)
		}
	}
	// Restore the processor's compacted area on top of a random image.
	rng := rand.New(rand.NewPCG(5, 6))
	got := randomImage(&l, xcr0, rng)
	if f := l.Restore(got, cmp, xcr0, true); f != OK {
		t.Fatal(f)
	}
	want, scratch := aligned(int(size)), aligned(int(size))
	hostcpu.RestoreSave(&cmp[0], &want[0], &scratch[0], xcr0)
	if !bytes.Equal(cut(&l, got, xcr0), cut(&l, want, xcr0)) {
		t.Errorf("XRSTOR model differs from the processor at byte %d", firstDiff(cut(&l, got, xcr0), cut(&l, want, xcr0)))
	}
}

func aligned(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+n]
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
