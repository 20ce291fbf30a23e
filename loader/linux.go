package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govmm/govmm/memory"
)

// linux.go implements Linux's x86 boot protocol (Documentation/x86/
// boot.rst) for its 64-bit entry: govmm builds the zero page (boot_params)
// with the command line, initrd, E820 map and ACPI RSDP, identity-maps the
// first 4 GiB and enters the kernel in long mode with RSI = the zero page.
// It takes either a bzImage (entered at its 64-bit entry, which runs the
// decompressor) or an ELF vmlinux (entered at startup_64 directly: no
// decompression, far faster on an emulating host). Left out: the 16-bit
// real-mode entry, EFI handover, setup_data chains.

// Guest-physical layout of the boot structures (below the 1 MiB kernel
// image of a bzImage and below the ACPI area at 0xE0000).
const (
	gdtAddr       = 0x500
	zeroPageAddr  = 0x7000
	pml4Addr      = 0x9000
	pdptAddr      = 0xA000
	pdAddr        = 0xB000 // four pages: 4 GiB in 2 MiB pages
	cmdlineAddr   = 0x20000
	cmdlineMax    = 0x10000
	bzImageLoad   = 0x100000
	initrdAddrMax = 0x7FFFFFFF

	bootFlagMagic = 0xAA55
	hdrSMagic     = 0x53726448 // "HdrS"
	xlfKernel64   = 1 << 0
	loadedHigh    = 1 << 0
	canUseHeap    = 1 << 7
)

// Boot segment selectors the protocol asks for (__BOOT_CS, __BOOT_DS).
const (
	BootCS = 0x10
	BootDS = 0x18
)

// Linux is the result of loading a kernel: where to start it and with what.
type Linux struct {
	Entry    uint64 // 64-bit entry point (physical = virtual: identity map)
	ZeroPage uint64 // RSI at entry
	PML4     uint64 // CR3 at entry
	GDT      uint64 // GDT base; limit GDTLimit
	// ELF says the kernel was an ELF vmlinux (no decompressor runs).
	ELF bool

	end uint64 // first byte above the loaded kernel
}

// GDTLimit is the limit of the boot GDT (null, null, code64, data).
const GDTLimit = 4*8 - 1

// LinuxOptions are the boot inputs besides the kernel image.
type LinuxOptions struct {
	Cmdline  string
	Initrd   []byte
	RSDPAddr uint64 // 0: let the kernel scan for it
	// Decompress enters a bzImage's uncompressed kernel directly (its
	// payload, decompressed by govmm) instead of its decompressor.
	Decompress bool
}

// ErrNotLinux means the image is neither a bzImage nor an x86-64 ELF.
var ErrNotLinux = errors.New("not a Linux bzImage or x86-64 ELF vmlinux")

// LoadLinux loads a bzImage or ELF vmlinux with its initrd and command line.
func LoadLinux(mem *memory.Memory, img []byte, o LinuxOptions) (*Linux, error) {
	if len(o.Cmdline)+1 > cmdlineMax {
		return nil, fmt.Errorf("kernel command line of %d bytes is too long", len(o.Cmdline))
	}
	zp := make([]byte, 4096)
	var l Linux
	var err error
	switch {
	case len(img) >= 4 && bytes.Equal(img[:4], []byte(elf.ELFMAG)):
		err = loadVmlinux(mem, img, zp, &l)
	case len(img) >= 0x250 && binary.LittleEndian.Uint32(img[0x202:]) == hdrSMagic && o.Decompress:
		var vmlinux []byte
		if vmlinux, err = bzImagePayload(img); err != nil {
			return nil, err
		}
		if err = loadVmlinux(mem, vmlinux, zp, &l); err != nil {
			return nil, err
		}
		// The kernel reads its own setup header (xloadflags, init_size...).
		hdrEnd := min(0x202+int(img[0x201]), 0x280)
		copy(zp[0x1F1:hdrEnd], img[0x1F1:hdrEnd])
	case len(img) >= 0x250 && binary.LittleEndian.Uint32(img[0x202:]) == hdrSMagic:
		err = loadBzImage(mem, img, zp, &l)
	default:
		return nil, ErrNotLinux
	}
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	zp[0x210] = 0xFF // type_of_loader: undefined loader
	zp[0x211] |= loadedHigh | canUseHeap
	le.PutUint16(zp[0x224:], 0xFE00) // heap_end_ptr
	if err := mem.Write(cmdlineAddr, append([]byte(o.Cmdline), 0)); err != nil {
		return nil, err
	}
	le.PutUint32(zp[0x228:], cmdlineAddr)
	le.PutUint32(zp[0x238:], cmdlineMax-1)
	if len(o.Initrd) > 0 {
		addr, err := placeInitrd(mem, zp, len(o.Initrd), l.end)
		if err != nil {
			return nil, err
		}
		if err := mem.Write(addr, o.Initrd); err != nil {
			return nil, err
		}
		le.PutUint32(zp[0x218:], uint32(addr))
		le.PutUint32(zp[0x21C:], uint32(len(o.Initrd)))
	}
	le.PutUint64(zp[0x070:], o.RSDPAddr)
	e820 := mem.E820()
	if len(e820) > 128 {
		return nil, errors.New("too many E820 entries")
	}
	zp[0x1E8] = uint8(len(e820))
	for i, e := range e820 {
		b := zp[0x2D0+20*i:]
		le.PutUint64(b, e.Addr)
		le.PutUint64(b[8:], e.Size)
		le.PutUint32(b[16:], e.Type)
	}
	if err := mem.Write(zeroPageAddr, zp); err != nil {
		return nil, err
	}
	if err := writePageTables(mem); err != nil {
		return nil, err
	}
	// GDT: null, null, code64 (__BOOT_CS), data (__BOOT_DS), Accessed set.
	gdt := make([]byte, 32)
	le.PutUint64(gdt[16:], 0x00AF9B000000FFFF)
	le.PutUint64(gdt[24:], 0x00CF93000000FFFF)
	if err := mem.Write(gdtAddr, gdt); err != nil {
		return nil, err
	}
	l.ZeroPage, l.PML4, l.GDT = zeroPageAddr, pml4Addr, gdtAddr
	return &l, nil
}

// loadBzImage copies the protected-mode kernel to 1 MiB and the setup
// header into the zero page.
func loadBzImage(mem *memory.Memory, img, zp []byte, l *Linux) error {
	le := binary.LittleEndian
	version := le.Uint16(img[0x206:])
	if version < 0x20C {
		return fmt.Errorf("bzImage boot protocol %d.%02d is too old (need 2.12 for the 64-bit entry)", version>>8, version&0xFF)
	}
	if le.Uint16(img[0x1FE:]) != bootFlagMagic {
		return errors.New("bzImage has no 0xAA55 boot flag")
	}
	if le.Uint16(img[0x236:])&xlfKernel64 == 0 {
		return errors.New("bzImage has no 64-bit entry point (xloadflags)")
	}
	setupSects := int(img[0x1F1])
	if setupSects == 0 {
		setupSects = 4
	}
	off := (setupSects + 1) * 512
	if off >= len(img) {
		return errors.New("bzImage is truncated: no protected-mode kernel")
	}
	hdrEnd := 0x202 + int(img[0x201])
	if hdrEnd > len(img) || hdrEnd > off || hdrEnd < 0x250 {
		hdrEnd = min(0x280, off)
	}
	copy(zp[0x1F1:hdrEnd], img[0x1F1:hdrEnd])
	kernel := img[off:]
	initSize := uint64(le.Uint32(img[0x260:]))
	if err := mem.Write(bzImageLoad, kernel); err != nil {
		return fmt.Errorf("kernel does not fit in guest memory: %w", err)
	}
	l.Entry = bzImageLoad + 0x200 // startup_64 of the decompressor
	l.end = bzImageLoad + max(uint64(len(kernel)), initSize)
	return nil
}

// loadVmlinux loads an ELF vmlinux by its physical addresses and fills the
// parts of the setup header the kernel reads.
func loadVmlinux(mem *memory.Memory, img, zp []byte, l *Linux) error {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return fmt.Errorf("kernel is not a valid ELF file: %w", err)
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("ELF kernel is %v %v, not x86-64", f.Class, f.Machine)
	}
	if l.end, err = loadSegments(mem, img, f); err != nil {
		return err
	}
	// startup_64 is entered at its physical address: e_entry is the
	// virtual one unless the kernel was linked with a physical entry.
	entry := f.Entry
	if entry >= 0xFFFFFFFF80000000 {
		entry -= 0xFFFFFFFF80000000
	}
	le := binary.LittleEndian
	le.PutUint16(zp[0x1FE:], bootFlagMagic)
	le.PutUint32(zp[0x202:], hdrSMagic)
	le.PutUint16(zp[0x206:], 0x20F)
	le.PutUint32(zp[0x22C:], initrdAddrMax)
	le.PutUint32(zp[0x230:], 0x1000000) // kernel_alignment
	l.Entry, l.ELF = entry, true
	return nil
}

// placeInitrd puts the initrd as high as the kernel allows below the 32-bit
// hole, page aligned, above the kernel.
func placeInitrd(mem *memory.Memory, zp []byte, n int, kernelEnd uint64) (uint64, error) {
	maxAddr := uint64(binary.LittleEndian.Uint32(zp[0x22C:]))
	if maxAddr == 0 {
		maxAddr = 0x37FFFFFF // protocol < 2.03 default
	}
	top := min(maxAddr+1, min(mem.Size(), memory.LowMemTop))
	if uint64(n) > top {
		return 0, fmt.Errorf("initrd of %d MiB does not fit below %#x", n>>20, top)
	}
	addr := (top - uint64(n)) &^ 0xFFF
	if addr < kernelEnd {
		return 0, fmt.Errorf("initrd of %d MiB does not fit between the kernel and %#x: give the VM more memory", n>>20, top)
	}
	return addr, nil
}

// writePageTables identity-maps the first 4 GiB with 2 MiB pages, the
// 32-bit MMIO hole uncached.
func writePageTables(mem *memory.Memory) error {
	le := binary.LittleEndian
	pml4 := make([]byte, 4096)
	le.PutUint64(pml4, pdptAddr|3)
	pdpt := make([]byte, 4096)
	pd := make([]byte, 4*4096)
	for i := 0; i < 4; i++ {
		le.PutUint64(pdpt[8*i:], uint64(pdAddr+4096*i)|3)
	}
	for i := 0; i < 2048; i++ {
		e := uint64(i)<<21 | 0x83 // present, writable, 2 MiB
		if uint64(i)<<21 >= memory.LowMemTop {
			e |= 0x18 // PCD | PWT
		}
		le.PutUint64(pd[8*i:], e)
	}
	for _, w := range []struct {
		addr uint64
		b    []byte
	}{{pml4Addr, pml4}, {pdptAddr, pdpt}, {pdAddr, pd}} {
		if err := mem.Write(w.addr, w.b); err != nil {
			return err
		}
	}
	return nil
}
