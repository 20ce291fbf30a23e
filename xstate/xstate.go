// Package xstate models the processor state that the XSAVE family of
// instructions manages (Intel SDM vol. 1, chapter 13, "Managing State Using
// the XSAVE Feature Set"; vol. 2 for XSAVE, XSAVEOPT, XSAVEC, XSAVES, XRSTOR,
// XRSTORS, XGETBV and XSETBV): the layout of an XSAVE area in its standard
// and compacted forms, what each save instruction stores, what each restore
// loads, and when they fault.
//
// It knows nothing of KVM or of guest memory. The processor's state is a
// standard-format image, the form KVM_GET_XSAVE returns and KVM_SET_XSAVE
// takes (legacy region, header whose XSTATE_BV says which components are in
// use, every extended component at its CPUID offset); guest memory is a
// byte slice the caller reads and writes. Package vcpu uses it to complete
// these instructions on hosts whose KVM cannot (complete/xsave.go).
//
// Left out: supervisor state components (IA32_XSS) other than in the
// checks (KVM's image carries none, so a save or restore that would move
// one is refused by the caller), the "modified" optimisation of XSAVEOPT
// and XSAVES (allowed to be skipped: they always store), the "init"
// optimisation of XSAVEOPT (an unused component is stored with its initial
// value, which restores identically), and the x87 FCS/FDS selectors of the
// 32-bit (non-REX.W) forms, stored as the image holds them.
package xstate

import (
	"encoding/binary"
	"math/bits"
)

// State components (bit numbers of XCR0, IA32_XSS, XSTATE_BV, XCOMP_BV).
const (
	X87      = 1 << 0
	SSE      = 1 << 1
	YMM      = 1 << 2
	BNDREGS  = 1 << 3
	BNDCSR   = 1 << 4
	OpMask   = 1 << 5
	ZMMHi256 = 1 << 6
	Hi16ZMM  = 1 << 7
	PKRU     = 1 << 9
	TileCfg  = 1 << 17
	TileData = 1 << 18

	AVX512 = OpMask | ZMMHi256 | Hi16ZMM
	MPX    = BNDREGS | BNDCSR
	AMX    = TileCfg | TileData

	compactedBit = 1 << 63
)

// Offsets in an XSAVE area.
const (
	LegacySize   = 512
	HeaderOffset = 512
	HeaderSize   = 64
	ExtendedBase = LegacySize + HeaderSize // 576: the first extended component in compacted form

	offMXCSR     = 24
	offMXCSRMask = 28
	offST        = 32
	offXMM       = 160
	mxcsrInit    = 0x1F80
	fcwInit      = 0x037F
	// mxcsrMaskDefault is the MXCSR mask of processors that store 0 in
	// MXCSR_MASK (SDM vol. 1, 11.6.6).
	mxcsrMaskDefault = 0xFFBF
)

// Fault is the exception an instruction raises instead of completing.
type Fault int

// Faults these instructions raise (with error code 0 where they have one).
const (
	OK Fault = iota
	GP       // #GP(0)
	UD       // #UD
	NM       // #NM (CR0.TS)
)

func (f Fault) Error() string {
	switch f {
	case GP:
		return "#GP(0)"
	case UD:
		return "#UD"
	case NM:
		return "#NM"
	}
	return "no fault"
}

// Component is one extended state component as CPUID leaf 0xD describes it.
type Component struct {
	Size       uint32 // CPUID.(0xD,i).EAX
	Offset     uint32 // CPUID.(0xD,i).EBX: its offset in the standard form
	Supervisor bool   // CPUID.(0xD,i).ECX[0]: an IA32_XSS component
	Align64    bool   // CPUID.(0xD,i).ECX[1]: 64-byte aligned in compacted form
}

// Layout is what the processor (here: the vCPU's CPUID) says of its XSAVE
// feature set.
type Layout struct {
	Components     [64]Component
	UserMask       uint64 // XCR0 bits the processor supports: CPUID.(0xD,0).EDX:EAX
	SupervisorMask uint64 // IA32_XSS bits it supports: CPUID.(0xD,1).EDX:ECX
	XSAVEOPT       bool   // CPUID.(0xD,1).EAX[0]
	XSAVEC         bool   // CPUID.(0xD,1).EAX[1]: XSAVEC and compacted XRSTOR
	XGETBV1        bool   // CPUID.(0xD,1).EAX[2]: XGETBV with ECX = 1
	XSAVES         bool   // CPUID.(0xD,1).EAX[3]: XSAVES, XRSTORS, IA32_XSS
}

// CPUID answers one CPUID leaf and sub-leaf.
type CPUID func(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// NewLayout reads the layout from CPUID leaf 0xD.
func NewLayout(cpuid CPUID) Layout {
	var l Layout
	a, _, _, d := cpuid(0xD, 0)
	l.UserMask = uint64(d)<<32 | uint64(a)
	a, _, c, d := cpuid(0xD, 1)
	l.XSAVEOPT, l.XSAVEC, l.XGETBV1, l.XSAVES = a&1 != 0, a&2 != 0, a&4 != 0, a&8 != 0
	l.SupervisorMask = uint64(d)<<32 | uint64(c)
	for m := (l.UserMask | l.SupervisorMask) &^ (X87 | SSE); m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		a, b, c, _ := cpuid(0xD, uint32(i))
		l.Components[i] = Component{Size: a, Offset: b, Supervisor: c&1 != 0, Align64: c&2 != 0}
	}
	return l
}

// StandardSize is the size of a standard-format area holding the user
// components in mask (what CPUID.(0xD,0).EBX reports for mask = XCR0).
func (l *Layout) StandardSize(mask uint64) uint32 {
	size := uint32(ExtendedBase)
	for m := mask &^ (X87 | SSE); m != 0; m &= m - 1 {
		c := l.Components[bits.TrailingZeros64(m)]
		if !c.Supervisor {
			size = max(size, c.Offset+c.Size)
		}
	}
	return size
}

// CompactedOffsets places the components of xcompBV in compacted form
// (SDM vol. 1, 13.4.3): each after the one before it, rounded up to 64 if it
// asks for alignment. It returns the offsets (0 for components not in
// xcompBV and for the legacy ones) and the area's size.
func (l *Layout) CompactedOffsets(xcompBV uint64) (offs [64]uint32, size uint32) {
	at := uint32(ExtendedBase)
	for m := xcompBV &^ (X87 | SSE | compactedBit); m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		c := l.Components[i]
		if c.Align64 {
			at = (at + 63) &^ 63
		}
		offs[i] = at
		at += c.Size
	}
	return offs, at
}

// SetXCR0 checks a value XSETBV writes to XCR0 (SDM vol. 2, XSETBV): bit 0
// set; YMM only with SSE; AVX-512 all or nothing and only with YMM; MPX
// both or neither; AMX both or neither; nothing the processor does not
// support, and no supervisor component.
func (l *Layout) SetXCR0(v uint64) Fault {
	switch {
	case v&X87 == 0,
		v&YMM != 0 && v&SSE == 0,
		v&AVX512 != 0 && (v&AVX512 != AVX512 || v&YMM == 0),
		v&MPX != 0 && v&MPX != MPX,
		v&AMX != 0 && v&AMX != AMX,
		v&^l.UserMask != 0: // supervisor components are never in UserMask
		return GP
	}
	return OK
}

// XGETBV answers XGETBV with ECX = ecx: XCR0, or with XGETBV1 the
// components of XCR0 that are in use (not in their initial state).
func (l *Layout) XGETBV(ecx uint32, xcr0 uint64, image []byte) (uint64, Fault) {
	switch {
	case ecx == 0:
		return xcr0, OK
	case ecx == 1 && l.XGETBV1:
		return xcr0 & InUse(image), OK
	}
	return 0, GP
}

// InUse is XINUSE as the image records it: its header's XSTATE_BV.
func InUse(image []byte) uint64 {
	return binary.LittleEndian.Uint64(image[HeaderOffset:])
}

// Store is one contiguous write of a save instruction into the area.
type Store struct {
	Off  uint32
	Data []byte
}

// SaveOp is which save instruction runs.
type SaveOp int

// The save instructions. XSAVEOPT stores what XSAVE does (its
// optimisations are permitted, not required).
const (
	XSAVE SaveOp = iota
	XSAVEOPT
	XSAVEC
	XSAVES
)

// Save returns what a save instruction with requested-feature bitmap rfbm
// (EDX:EAX AND XCR0, or AND (XCR0 | IA32_XSS) for XSAVES) stores into the
// area, from the processor's state in image. oldXstateBV is the area's
// XSTATE_BV before the instruction: the standard form keeps its bits
// outside rfbm. mode64: in 64-bit mode XMM8-15 are stored too. The stores
// alias image.
func (l *Layout) Save(op SaveOp, image []byte, rfbm, oldXstateBV uint64, mode64 bool) []Store {
	inUse := InUse(image)
	compacted := op == XSAVEC || op == XSAVES
	stored := rfbm
	if compacted {
		stored &= inUse // compacted forms store only components in use
	}
	var out []Store
	if stored&X87 != 0 {
		out = append(out, Store{0, image[0:offMXCSR]}, Store{offST, image[offST:offXMM]})
	}
	if rfbm&(SSE|YMM) != 0 {
		out = append(out, Store{offMXCSR, image[offMXCSR : offMXCSRMask+4]})
	}
	if stored&SSE != 0 {
		out = append(out, Store{offXMM, image[offXMM : offXMM+16*xmmCount(mode64)]})
	}
	var offs [64]uint32
	if compacted {
		offs, _ = l.CompactedOffsets(rfbm)
	}
	for m := stored &^ (X87 | SSE); m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		c := l.Components[i]
		at := c.Offset
		if compacted {
			at = offs[i]
		}
		out = append(out, Store{at, image[c.Offset : c.Offset+c.Size]})
	}
	hdr := make([]byte, 16)
	if compacted {
		binary.LittleEndian.PutUint64(hdr, rfbm&inUse)
		binary.LittleEndian.PutUint64(hdr[8:], rfbm|compactedBit)
	} else {
		binary.LittleEndian.PutUint64(hdr, oldXstateBV&^rfbm|inUse&rfbm)
		hdr = hdr[:8]
	}
	return append(out, Store{HeaderOffset, hdr})
}

// SaveSize is how many bytes of the area a save may touch, for checking
// the area's pages before storing.
func (l *Layout) SaveSize(op SaveOp, rfbm uint64) uint32 {
	if op == XSAVEC || op == XSAVES {
		_, size := l.CompactedOffsets(rfbm)
		return size
	}
	return l.StandardSize(rfbm)
}

// RestoreArea checks the header of the area a restore instruction loads
// from (SDM vol. 2, XRSTOR and XRSTORS, "Protected Mode Exceptions") and
// returns how many bytes of the area it reads. permitted is XCR0 for
// XRSTOR, XCR0 | IA32_XSS for XRSTORS; xrstors says which.
func (l *Layout) RestoreArea(header []byte, permitted uint64, xrstors bool) (uint32, Fault) {
	xstateBV := binary.LittleEndian.Uint64(header)
	xcompBV := binary.LittleEndian.Uint64(header[8:])
	if xcompBV&compactedBit == 0 {
		// The standard form: XCOMP_BV and the 8 bytes after it are zero,
		// XSTATE_BV has no bit outside XCR0. XRSTORS has no standard form.
		if xrstors || xstateBV&^permitted != 0 || !zero(header[8:24]) {
			return 0, GP
		}
		return l.StandardSize(xstateBV & permitted), OK
	}
	if !xrstors && !l.XSAVEC {
		return 0, GP // a compacted area on a processor without compaction
	}
	if xcompBV&^compactedBit&^permitted != 0 || xstateBV&^xcompBV != 0 || !zero(header[16:HeaderSize]) {
		return 0, GP
	}
	_, size := l.CompactedOffsets(xcompBV)
	return size, OK
}

// Restore loads the components of rfbm from area into image, as XRSTOR or
// XRSTORS does: a component whose XSTATE_BV bit is set is loaded from the
// area, one whose bit is clear is put in its initial state; components
// outside rfbm are left as they are. The image's XSTATE_BV follows. area
// must hold what RestoreArea said. A reserved MXCSR bit faults (#GP) and
// leaves image unchanged.
func (l *Layout) Restore(image, area []byte, rfbm uint64, mode64 bool) Fault {
	xstateBV := binary.LittleEndian.Uint64(area[HeaderOffset:])
	xcompBV := binary.LittleEndian.Uint64(area[HeaderOffset+8:])
	compacted := xcompBV&compactedBit != 0
	if rfbm&(SSE|YMM) != 0 && (!compacted || xstateBV&rfbm&(SSE|YMM) != 0) {
		mask := binary.LittleEndian.Uint32(image[offMXCSRMask:])
		if mask == 0 {
			mask = mxcsrMaskDefault
		}
		if binary.LittleEndian.Uint32(area[offMXCSR:])&^mask != 0 {
			return GP
		}
		copy(image[offMXCSR:offMXCSR+4], area[offMXCSR:])
	} else if rfbm&SSE != 0 {
		binary.LittleEndian.PutUint32(image[offMXCSR:], mxcsrInit)
	}
	if rfbm&X87 != 0 {
		if xstateBV&X87 != 0 {
			copy(image[0:offMXCSR], area[0:offMXCSR])
			copy(image[offST:offXMM], area[offST:offXMM])
		} else {
			clear(image[0:offMXCSR])
			clear(image[offST:offXMM])
			binary.LittleEndian.PutUint16(image, fcwInit)
		}
	}
	if rfbm&SSE != 0 {
		xmm := image[offXMM : offXMM+16*xmmCount(mode64)]
		if xstateBV&SSE != 0 {
			copy(xmm, area[offXMM:])
		} else {
			clear(xmm)
		}
	}
	var offs [64]uint32
	if compacted {
		offs, _ = l.CompactedOffsets(xcompBV)
	}
	for m := rfbm &^ (X87 | SSE); m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		c := l.Components[i]
		dst := image[c.Offset : c.Offset+c.Size]
		at := c.Offset
		if compacted {
			at = offs[i]
		}
		if xstateBV&(1<<i) != 0 {
			copy(dst, area[at:at+c.Size])
		} else {
			clear(dst) // every extended component's initial state is zero
		}
	}
	inUse := InUse(image)&^rfbm | xstateBV&rfbm
	binary.LittleEndian.PutUint64(image[HeaderOffset:], inUse)
	return OK
}

func xmmCount(mode64 bool) int {
	if mode64 {
		return 16
	}
	return 8
}

func zero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
