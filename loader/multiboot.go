// Package loader puts a kernel image into guest memory and says how to
// enter it. multiboot.go implements Multiboot v1 (the GNU Multiboot
// Specification 0.6.96) as QEMU's -kernel does for bare-metal test kernels:
// ELF32/ELF64 images loaded by their program headers (or the a.out kludge
// addresses), the boot information with memory sizes, command line, modules
// and memory map. Left out: VBE/framebuffer info, symbol tables, the boot
// device, APM and drive tables.
package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/govmm/govmm/memory"
)

const (
	multibootMagic      = 0x1BADB002
	multibootBootloader = 0x2BADB002
	headerSearch        = 8192

	flagPageAlign = 1 << 0
	flagMemInfo   = 1 << 1
	flagVideo     = 1 << 2
	flagAOut      = 1 << 16

	infoMem     = 1 << 0
	infoCmdline = 1 << 2
	infoMods    = 1 << 3
	infoMmap    = 1 << 6
	infoLoader  = 1 << 9
)

// Where the boot information lives: low memory a test kernel does not load
// into (below its 1 MiB image, above the real-mode IVT/BDA).
const (
	infoAddr    = 0x6000
	infoLimit   = 0x8000 // APs' trampolines commonly go here
	loaderName  = "govmm"
	maxCmdline  = 4096
	moduleAlign = 4096
)

// Module is a Multiboot module: its bytes and its string (command line).
type Module struct {
	Data   []byte
	String string
}

// Multiboot is the entry state of a loaded Multiboot kernel: 32-bit
// protected mode, EAX = the bootloader magic, EBX = InfoAddr.
type Multiboot struct {
	Entry    uint32
	InfoAddr uint32
	EAX      uint32
	End      uint64 // highest byte used by kernel and modules
}

// ErrNotMultiboot means the image has no Multiboot v1 header.
var ErrNotMultiboot = errors.New("no Multiboot header in the first 8 KiB")

type mbHeader struct {
	Magic, Flags, Checksum                                   uint32
	HeaderAddr, LoadAddr, LoadEndAddr, BSSEndAddr, EntryAddr uint32
}

func findHeader(img []byte) (mbHeader, int, error) {
	for off := 0; off+12 <= len(img) && off < headerSearch; off += 4 {
		if binary.LittleEndian.Uint32(img[off:]) != multibootMagic {
			continue
		}
		var h mbHeader
		n := min(len(img)-off, 32)
		buf := make([]byte, 32)
		copy(buf, img[off:off+n])
		binary.Read(bytes.NewReader(buf), binary.LittleEndian, &h)
		if h.Magic+h.Flags+h.Checksum != 0 {
			return h, off, fmt.Errorf("multiboot header at offset %#x has a bad checksum", off)
		}
		return h, off, nil
	}
	return mbHeader{}, 0, ErrNotMultiboot
}

// LoadMultiboot loads img with its cmdline and modules into mem.
func LoadMultiboot(mem *memory.Memory, img []byte, cmdline string, mods []Module) (*Multiboot, error) {
	h, off, err := findHeader(img)
	if err != nil {
		return nil, err
	}
	// Bits 0-15 are requirements: refuse the ones govmm cannot meet. Video
	// (bit 2) is a preference a loader may ignore, as QEMU does.
	if h.Flags&0xFFFF&^(flagPageAlign|flagMemInfo|flagVideo) != 0 {
		return nil, fmt.Errorf("multiboot header requires unsupported features (flags %#x)", h.Flags)
	}
	var mb Multiboot
	if h.Flags&flagAOut != 0 {
		err = loadAOut(mem, img, h, off, &mb)
	} else {
		err = loadELF(mem, img, &mb)
	}
	if err != nil {
		return nil, err
	}
	if err := writeInfo(mem, cmdline, mods, &mb); err != nil {
		return nil, err
	}
	return &mb, nil
}

// loadAOut loads by the header's addresses (the "a.out kludge").
func loadAOut(mem *memory.Memory, img []byte, h mbHeader, off int, mb *Multiboot) error {
	if h.HeaderAddr < h.LoadAddr || uint32(off) < h.HeaderAddr-h.LoadAddr {
		return errors.New("multiboot a.out header addresses are inconsistent")
	}
	start := uint32(off) - (h.HeaderAddr - h.LoadAddr)
	end := uint32(len(img))
	if h.LoadEndAddr != 0 {
		if h.LoadEndAddr < h.LoadAddr || start+(h.LoadEndAddr-h.LoadAddr) > end {
			return errors.New("multiboot load_end_addr lies outside the image")
		}
		end = start + (h.LoadEndAddr - h.LoadAddr)
	}
	if err := mem.Write(uint64(h.LoadAddr), img[start:end]); err != nil {
		return fmt.Errorf("kernel does not fit in guest memory: %w", err)
	}
	top := uint64(h.LoadAddr) + uint64(end-start)
	if h.BSSEndAddr > uint32(top) {
		z, err := mem.Slice(top, uint64(h.BSSEndAddr)-top)
		if err != nil {
			return fmt.Errorf("kernel bss does not fit in guest memory: %w", err)
		}
		clear(z)
		top = uint64(h.BSSEndAddr)
	}
	mb.Entry, mb.End = h.EntryAddr, top
	return nil
}

// loadELF loads the PT_LOAD segments at their physical addresses.
func loadELF(mem *memory.Memory, img []byte, mb *Multiboot) error {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return fmt.Errorf("multiboot kernel is not a valid ELF file: %w", err)
	}
	if f.Machine != elf.EM_386 && f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("multiboot kernel is for %v, not x86", f.Machine)
	}
	end, err := loadSegments(mem, img, f)
	if err != nil {
		return err
	}
	mb.End = max(mb.End, end)
	if f.Entry > 0xFFFFFFFF {
		return fmt.Errorf("multiboot entry point %#x is above 4 GiB", f.Entry)
	}
	mb.Entry = uint32(f.Entry)
	return nil
}

// writeInfo builds the Multiboot information structure, its memory map and
// command lines at infoAddr, and loads the modules page-aligned after the
// kernel.
func writeInfo(mem *memory.Memory, cmdline string, mods []Module, mb *Multiboot) error {
	area, err := mem.Slice(infoAddr, infoLimit-infoAddr)
	if err != nil {
		return err
	}
	clear(area)
	// Layout inside the area: info (0x80 bytes), mmap, module list, strings.
	const infoSize = 0x80
	pos := infoSize
	alloc := func(n int) (int, error) {
		p := (pos + 7) &^ 7
		if p+n > len(area) {
			return 0, errors.New("multiboot command lines and module list exceed the boot-information area")
		}
		pos = p + n
		return p, nil
	}
	putStr := func(s string) (uint32, error) {
		if len(s) > maxCmdline {
			return 0, fmt.Errorf("command line of %d bytes is longer than %d", len(s), maxCmdline)
		}
		p, err := alloc(len(s) + 1)
		if err != nil {
			return 0, err
		}
		copy(area[p:], s)
		return uint32(infoAddr + p), nil
	}
	le := binary.LittleEndian
	info := area[:infoSize]
	flags := uint32(infoMem | infoCmdline | infoMmap | infoLoader)

	e820 := mem.E820()
	mmapOff, err := alloc(24 * len(e820))
	if err != nil {
		return err
	}
	for i, e := range e820 {
		b := area[mmapOff+24*i:]
		le.PutUint32(b[0:], 20) // size of the entry that follows
		le.PutUint64(b[4:], e.Addr)
		le.PutUint64(b[12:], e.Size)
		le.PutUint32(b[20:], e.Type)
	}
	le.PutUint32(info[44:], uint32(24*len(e820)))
	le.PutUint32(info[48:], uint32(infoAddr+mmapOff))
	le.PutUint32(info[4:], 640)
	upper := (min(mem.Size(), memory.LowMemTop) - 0x100000) >> 10
	le.PutUint32(info[8:], uint32(min(upper, 0xFFFFFFFF)))

	cl, err := putStr(cmdline)
	if err != nil {
		return err
	}
	le.PutUint32(info[16:], cl)
	name, err := putStr(loaderName)
	if err != nil {
		return err
	}
	le.PutUint32(info[64:], name)

	if len(mods) > 0 {
		flags |= infoMods
		listOff, err := alloc(16 * len(mods))
		if err != nil {
			return err
		}
		next := (mb.End + moduleAlign - 1) &^ (moduleAlign - 1)
		for i, m := range mods {
			if err := mem.Write(next, m.Data); err != nil {
				return fmt.Errorf("module %d (%d bytes) does not fit in guest memory", i, len(m.Data))
			}
			s, err := putStr(m.String)
			if err != nil {
				return err
			}
			e := area[listOff+16*i:]
			le.PutUint32(e[0:], uint32(next))
			le.PutUint32(e[4:], uint32(next+uint64(len(m.Data))))
			le.PutUint32(e[8:], s)
			next = (next + uint64(len(m.Data)) + moduleAlign - 1) &^ (moduleAlign - 1)
		}
		mb.End = next
		le.PutUint32(info[20:], uint32(len(mods)))
		le.PutUint32(info[24:], uint32(infoAddr+listOff))
	}
	le.PutUint32(info[0:], flags)
	mb.InfoAddr, mb.EAX = infoAddr, multibootBootloader
	return nil
}

// loadSegments copies an ELF image's PT_LOAD segments to their physical
// addresses, zero-filling the rest of each, and returns the first byte
// above them.
func loadSegments(mem *memory.Memory, img []byte, f *elf.File) (uint64, error) {
	var end uint64
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		if p.Filesz > p.Memsz || p.Off+p.Filesz > uint64(len(img)) {
			return 0, fmt.Errorf("ELF segment at %#x is truncated or inconsistent", p.Paddr)
		}
		dst, err := mem.Slice(p.Paddr, p.Memsz)
		if err != nil {
			return 0, fmt.Errorf("kernel segment at %#x (%d bytes) does not fit in guest memory", p.Paddr, p.Memsz)
		}
		copy(dst, img[p.Off:p.Off+p.Filesz])
		clear(dst[p.Filesz:])
		end = max(end, p.Paddr+p.Memsz)
	}
	if end == 0 {
		return 0, errors.New("ELF kernel has no loadable segment")
	}
	return end, nil
}

// MultibootCmdline is the command line a Multiboot kernel gets, built as
// QEMU builds it for -kernel KERNEL -append ARGS: the image's path, a
// space, the arguments (the path alone when there are none).
func MultibootCmdline(path, args string) string {
	if path == "" {
		return args
	}
	if args == "" {
		return path
	}
	return path + " " + args
}
