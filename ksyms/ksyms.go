// Package ksyms names guest kernel code addresses from the symbol table of
// the kernel image govmm booted (an ELF vmlinux that is not stripped), so
// that a dump of a stuck guest says "tick_handle_periodic+0x4a" where it
// would otherwise print a bare RIP.
//
// A Table is immutable once built and safe for concurrent use; a nil
// *Table names nothing.
package ksyms

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"sort"
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
