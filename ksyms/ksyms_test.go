package ksyms

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

type testSym struct {
	name       string
	addr, size uint64
	typ        elf.SymType
}

// buildELF writes a minimal ELF64 image whose only content is a symbol
// table: the part of a vmlinux that ksyms reads.
func buildELF(t *testing.T, syms []testSym) []byte {
	t.Helper()
	strtab := []byte{0}
	var symtab bytes.Buffer
	le := binary.LittleEndian
	binary.Write(&symtab, le, elf.Sym64{}) // index 0: the null symbol
	for _, s := range syms {
		binary.Write(&symtab, le, elf.Sym64{Name: uint32(len(strtab)), Info: elf.ST_INFO(elf.STB_GLOBAL, s.typ),
			Shndx: uint16(elf.SHN_ABS), Value: s.addr, Size: s.size})
		strtab = append(append(strtab, s.name...), 0)
	}
	shstrtab := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	symOff := uint64(ehsize)
	strOff := symOff + uint64(symtab.Len())
	shstrOff := strOff + uint64(len(strtab))
	shOff := (shstrOff + uint64(len(shstrtab)) + 7) &^ 7
	var out bytes.Buffer
	hdr := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: shOff, Ehsize: ehsize, Shentsize: shentsize, Shnum: 4, Shstrndx: 3}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.Write(&out, le, hdr)
	out.Write(symtab.Bytes())
	out.Write(strtab)
	out.Write(shstrtab)
	out.Write(make([]byte, shOff-uint64(out.Len())))
	for _, sh := range []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_SYMTAB), Off: symOff, Size: uint64(symtab.Len()), Link: 2, Info: 1, Addralign: 8, Entsize: 24},
		{Name: 9, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(strtab)), Addralign: 1},
		{Name: 17, Type: uint32(elf.SHT_STRTAB), Off: shstrOff, Size: uint64(len(shstrtab)), Addralign: 1},
	} {
		binary.Write(&out, le, sh)
	}
	return out.Bytes()
}

func TestLookup(t *testing.T) {
	img := buildELF(t, []testSym{
		{"tick_handle_periodic", 0xffffffff81100000, 0x100, elf.STT_FUNC},
		{"tick_periodic", 0xffffffff81100200, 0x80, elf.STT_FUNC},
		{"jiffies", 0xffffffff81100100, 8, elf.STT_OBJECT}, // data: never a code name
		{"entry_SYSCALL_64", 0xffffffff81000000, 0, elf.STT_FUNC},
		{"asm_sysvec_apic_timer_interrupt", 0xffffffff81000400, 0, elf.STT_FUNC},
		{"_etext", 0xffffffff82000000, 0, elf.STT_NOTYPE},
	})
	tab, err := FromELF(img)
	if err != nil || tab == nil {
		t.Fatalf("FromELF: %v, %v", tab, err)
	}
	if tab.Len() != 4 {
		t.Errorf("Len %d, want the 4 functions", tab.Len())
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81100000, "tick_handle_periodic+0x0"},
		{0xffffffff8110004a, "tick_handle_periodic+0x4a"},
		{0xffffffff811000ff, "tick_handle_periodic+0xff"},
		{0xffffffff81100100, ""}, // past its size, in a data object
		{0xffffffff81100210, "tick_periodic+0x10"},
		{0xffffffff81100280, ""},
		{0xffffffff81000123, "entry_SYSCALL_64+0x123"}, // no size: up to the next function
		{0xffffffff810003ff, "entry_SYSCALL_64+0x3ff"},
		{0xffffffff81000400, "asm_sysvec_apic_timer_interrupt+0x0"},
		{0xffffffff80ffffff, ""}, // below every function
		{0xffffffff82000000, ""}, // after the last sized function and a sizeless one: unknown
		{0x10, ""},
	} {
		if got := tab.Name(c.addr); got != c.want {
			t.Errorf("Name(%#x) = %q, want %q", c.addr, got, c.want)
		}
	}
}

func TestNotELF(t *testing.T) {
	for _, img := range [][]byte{nil, []byte("MZ\x00\x00bzImage"), make([]byte, 4096)} {
		tab, err := FromELF(img)
		if tab != nil || err != nil {
			t.Errorf("FromELF(%d bytes) = %v, %v; want nil, nil", len(img), tab, err)
		}
	}
	var nilTab *Table
	if nilTab.Name(0xffffffff81000000) != "" || nilTab.Len() != 0 {
		t.Error("a nil table names something")
	}
	// A stripped ELF (the payload of a bzImage): no table, no error.
	if tab, err := FromELF(buildELF(t, nil)); tab != nil || err != nil {
		t.Errorf("ELF without functions: %v, %v", tab, err)
	}
}

func TestCorruptELF(t *testing.T) {
	img := append([]byte(elf.ELFMAG), make([]byte, 60)...)
	if _, err := FromELF(img); err == nil {
		t.Error("a truncated ELF header gave no error")
	}
}

func TestSystemMap(t *testing.T) {
	m := `ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t secondary_startup_64
ffffffff81100000 T tick_handle_periodic
ffffffff81100100 D jiffies
ffffffff81100200 W arch_cpu_idle
0000000000000000 A __per_cpu_start
`
	tab, err := FromSystemMap([]byte(m))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xffffffff81000050, "startup_64+0x50"}, // or its alias _stext: same address
		{0xffffffff81000150, "secondary_startup_64+0x50"},
		{0xffffffff8110004a, "tick_handle_periodic+0x4a"},
		{0xffffffff81100108, ""}, // in jiffies
		{0xffffffff81100210, ""}, // after the last symbol: size unknown
	} {
		got := tab.Name(c.addr)
		if c.addr == 0xffffffff81000050 && got == "_stext+0x50" {
			continue
		}
		if got != c.want {
			t.Errorf("Name(%#x) = %q, want %q", c.addr, got, c.want)
		}
	}
	for _, bad := range []string{"ffffffff81000000 T\n", "zz T x\n", "ffffffff81000000 D only_data\n"} {
		if _, err := FromSystemMap([]byte(bad)); err == nil {
			t.Errorf("FromSystemMap(%q) gave no error", bad)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	elfPath := write("vmlinux", buildELF(t, []testSym{{"f", 0x1000, 0x10, elf.STT_FUNC}}))
	if tab, err := Open(elfPath); err != nil || tab.Name(0x1004) != "f+0x4" {
		t.Errorf("Open(vmlinux): %v, %v", tab, err)
	}
	mapPath := write("System.map", []byte("0000000000001000 T f\n0000000000001010 T g\n"))
	if tab, err := Open(mapPath); err != nil || tab.Name(0x1004) != "f+0x4" {
		t.Errorf("Open(System.map): %v, %v", tab, err)
	}
	stripped := write("stripped", buildELF(t, nil))
	if _, err := Open(stripped); err == nil || !strings.Contains(err.Error(), "without a symbol table") {
		t.Errorf("Open(stripped ELF) = %v", err)
	}
	if _, err := Open(dir + "/missing"); err == nil {
		t.Error("Open(missing file) gave no error")
	}
	junk := write("junk", []byte("\x00\x01binary junk\n"))
	if _, err := Open(junk); err == nil {
		t.Error("Open(junk) gave no error")
	}
}
