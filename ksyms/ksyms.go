// Package ksyms names guest kernel code addresses from the symbol table of
// the kernel image govmm booted (an ELF vmlinux that is not stripped) or
// from a System.map (for a bzImage), so that a dump of a stuck guest says
// "tick_handle_periodic+0x4a" where it would otherwise print a bare RIP.
//
// A Table is immutable once built and safe for concurrent use; a nil
// *Table names nothing.
package ksyms

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Table is a kernel's function symbols, sorted by address.
type Table struct {
	syms []sym
}

type sym struct {
	addr, size uint64
	name       string
}

// FromELF reads the function symbols of an ELF image. An image that is not
// ELF (a bzImage, a Multiboot kernel) or has no symbol table gives a nil
// Table and no error: symbols are a convenience, never a requirement.
func FromELF(img []byte) (*Table, error) {
	if len(img) < 4 || !bytes.Equal(img[:4], []byte(elf.ELFMAG)) {
		return nil, nil
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	defer f.Close()
	all, err := f.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	t := &Table{}
	for _, s := range all {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		t.syms = append(t.syms, sym{addr: s.Value, size: s.Size, name: s.Name})
	}
	if len(t.syms) == 0 {
		return nil, nil
	}
	sort.Slice(t.syms, func(i, j int) bool { return t.syms[i].addr < t.syms[j].addr })
	return t, nil
}

// FromSystemMap reads the text symbols (types T, t, W, w) of a System.map:
// "ffffffff81000000 T _stext" a line. It has no sizes, so a function
// reaches up to the next symbol; data symbols still end the one before.
func FromSystemMap(data []byte) (*Table, error) {
	t := &Table{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	var ends []uint64 // addresses of non-text symbols
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || len(f[1]) != 1 {
			return nil, fmt.Errorf("line %d of System.map: %q is not \"ADDRESS TYPE NAME\"", line, sc.Text())
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d of System.map: bad address %q", line, f[0])
		}
		switch f[1] {
		case "T", "t", "W", "w":
			t.syms = append(t.syms, sym{addr: addr, name: f[2]})
		default:
			ends = append(ends, addr)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading System.map: %w", err)
	}
	if len(t.syms) == 0 {
		return nil, errors.New("no text symbols in System.map")
	}
	sort.Slice(t.syms, func(i, j int) bool { return t.syms[i].addr < t.syms[j].addr })
	sort.Slice(ends, func(i, j int) bool { return ends[i] < ends[j] })
	// Give each function the size up to the next symbol of any kind, so
	// that an address in data after the last function names nothing.
	for i := range t.syms {
		next := ^uint64(0)
		if i+1 < len(t.syms) {
			next = t.syms[i+1].addr
		}
		if j := sort.Search(len(ends), func(j int) bool { return ends[j] > t.syms[i].addr }); j < len(ends) && ends[j] < next {
			next = ends[j]
		}
		if next != ^uint64(0) && next > t.syms[i].addr {
			t.syms[i].size = next - t.syms[i].addr
		}
	}
	return t, nil
}

// Open reads the symbols of path: an ELF image with a symbol table, else a
// System.map. Unlike FromELF it fails when it finds no symbols, since the
// user named the file for them.
func Open(path string) (*Table, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte(elf.ELFMAG)) {
		t, err := FromELF(data)
		if err == nil && t == nil {
			err = fmt.Errorf("%s is an ELF image without a symbol table", path)
		}
		return t, err
	}
	t, err := FromSystemMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Lookup returns the function that contains addr and addr's offset in it.
// Functions of unknown size (assembly entry points) contain everything up
// to the next symbol.
func (t *Table) Lookup(addr uint64) (name string, off uint64, ok bool) {
	if t == nil {
		return "", 0, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr }) - 1
	if i < 0 {
		return "", 0, false
	}
	s := t.syms[i]
	off = addr - s.addr
	if s.size != 0 && off >= s.size {
		return "", 0, false
	}
	if s.size == 0 && i == len(t.syms)-1 {
		return "", 0, false
	}
	return s.name, off, true
}

// Name formats addr as "function+0xoff", or "" when no function holds it.
func (t *Table) Name(addr uint64) string {
	name, off, ok := t.Lookup(addr)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s+%#x", name, off)
}

// Len is the number of function symbols.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}
