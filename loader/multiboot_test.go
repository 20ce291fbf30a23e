package loader

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govmm/govmm/memory"
)

// aoutImage builds a kernel using the a.out kludge: header at offset 0,
// loaded at 1 MiB, with bss.
func aoutImage(flags uint32, bad bool) []byte {
	img := make([]byte, 64)
	le := binary.LittleEndian
	flags |= flagAOut
	sum := -(multibootMagic + flags)
	if bad {
		sum++
	}
	for i, v := range []uint32{multibootMagic, flags, uint32(sum), 0x100000, 0x100000, 0x100040, 0x100100, 0x100020} {
		le.PutUint32(img[4*i:], v)
	}
	img[0x30] = 0xF4 // hlt
	return img
}

func TestLoadMultibootAOut(t *testing.T) {
	mem, err := memory.New(16 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	mods := []Module{{Data: []byte("A=1\nB=2\n"), String: "env"}}
	mb, err := LoadMultiboot(mem, aoutImage(flagMemInfo|flagPageAlign, false), "mode=x2apic-phys", mods)
	if err != nil {
		t.Fatal(err)
	}
	if mb.Entry != 0x100020 || mb.EAX != 0x2BADB002 || mb.InfoAddr != infoAddr {
		t.Fatalf("entry %#x eax %#x info %#x", mb.Entry, mb.EAX, mb.InfoAddr)
	}
	b, _ := mem.Slice(0x100030, 1)
	if b[0] != 0xF4 {
		t.Fatal("image not loaded at its load address")
	}
	le := binary.LittleEndian
	info, _ := mem.Slice(infoAddr, 0x80)
	flags := le.Uint32(info)
	for _, f := range []uint32{infoMem, infoCmdline, infoMods, infoMmap} {
		if flags&f == 0 {
			t.Errorf("info flag %#x missing (flags %#x)", f, flags)
		}
	}
	if lo, up := le.Uint32(info[4:]), le.Uint32(info[8:]); lo != 640 || up != (16<<10)-1024 {
		t.Errorf("mem_lower %d mem_upper %d", lo, up)
	}
	str := func(addr uint32) string {
		b, _ := mem.Slice(uint64(addr), 64)
		for i, c := range b {
			if c == 0 {
				return string(b[:i])
			}
		}
		return string(b)
	}
	if got := str(le.Uint32(info[16:])); got != "mode=x2apic-phys" {
		t.Errorf("cmdline %q", got)
	}
	if n := le.Uint32(info[20:]); n != 1 {
		t.Fatalf("mods_count %d", n)
	}
	mod, _ := mem.Slice(uint64(le.Uint32(info[24:])), 16)
	start, end := le.Uint32(mod), le.Uint32(mod[4:])
	if start%4096 != 0 || start < 0x100100 || end-start != 8 || str(le.Uint32(mod[8:])) != "env" {
		t.Errorf("module at [%#x,%#x) string %q", start, end, str(le.Uint32(mod[8:])))
	}
	data, _ := mem.Slice(uint64(start), 8)
	if string(data) != "A=1\nB=2\n" {
		t.Errorf("module data %q", data)
	}
	mmapLen, mmapAddr := le.Uint32(info[44:]), le.Uint32(info[48:])
	mm, _ := mem.Slice(uint64(mmapAddr), uint64(mmapLen))
	var ram uint64
	for off := 0; off < len(mm); off += 24 {
		if le.Uint32(mm[off+20:]) == memory.E820RAM {
			ram += le.Uint64(mm[off+12:])
		}
	}
	if ram != 16<<20-0x100000+0x9FC00 {
		t.Errorf("memory map RAM %#x", ram)
	}
}

func TestLoadMultibootErrors(t *testing.T) {
	mem, err := memory.New(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	big := aoutImage(0, false)
	binary.LittleEndian.PutUint32(big[12:], 0x800000) // header_addr far above the image
	binary.LittleEndian.PutUint32(big[16:], 0x800000)
	binary.LittleEndian.PutUint32(big[20:], 0x800040)
	for name, img := range map[string][]byte{
		"empty":        nil,
		"no header":    make([]byte, 9000),
		"bad checksum": aoutImage(0, true),
		"unsupported":  aoutImage(1<<3, false),
		"too big":      big,
	} {
		if _, err := LoadMultiboot(mem, img, "", nil); err == nil {
			t.Errorf("%s: loaded", name)
		} else if name == "no header" && !errors.Is(err, ErrNotMultiboot) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMultibootCmdlineAsQEMU(t *testing.T) {
	for _, c := range [][3]string{{"/k/ipi.elf", "mode=x2apic-cluster rounds=2", "/k/ipi.elf mode=x2apic-cluster rounds=2"},
		{"/k/ipi.elf", "", "/k/ipi.elf"}, {"", "a=1", "a=1"}} {
		if got := MultibootCmdline(c[0], c[1]); got != c[2] {
			t.Errorf("MultibootCmdline(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
