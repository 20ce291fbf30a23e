// This file saves and restores a function's state for a snapshot: its
// configuration space as the guest left it (BARs, command, the
// capabilities' stored registers) and its MSI-X and MSI registers,
// masks and pending bits.

package pci

import (
	"errors"
	"fmt"
)

// FunctionSaved is a function's state in a snapshot.
type FunctionSaved struct {
	Config []byte     // the configuration space's first 256 bytes
	MSIX   *MSIXSaved `json:",omitempty"`
	MSI    *MSISaved  `json:",omitempty"`
}

// MSIXSaved is an MSI-X capability's state: its control bits, the vector
// table (address low, address high, data, vector control per entry) and
// the pending bits of vectors held back by a mask.
type MSIXSaved struct {
	Enabled, FuncMask bool
	Entries           [][4]uint32
	Pending           []uint64
}

// MSISaved is an MSI capability's state.
type MSISaved struct {
	Enabled, Masked, Pending bool
	AddrLo, AddrHi, Data     uint32
}

// Save returns the function's state. Device backends may still Signal;
// a snapshot stops them first, so the pending bits are whole.
func (f *Function) Save() FunctionSaved {
	f.mu.Lock()
	s := FunctionSaved{Config: append([]byte(nil), f.cfg[:]...)}
	f.mu.Unlock()
	if m := f.msix; m != nil {
		m.mu.Lock()
		ms := &MSIXSaved{Enabled: m.enabled, FuncMask: m.funcMask, Pending: append([]uint64(nil), m.pending...)}
		for _, e := range m.entries {
			ms.Entries = append(ms.Entries, [4]uint32{e.addrLo, e.addrHi, e.data, e.ctrl})
		}
		m.mu.Unlock()
		s.MSIX = ms
	}
	if m := f.msi; m != nil {
		m.mu.Lock()
		s.MSI = &MSISaved{Enabled: m.enabled, Masked: m.masked, Pending: m.pending, AddrLo: m.addrLo, AddrHi: m.addrHi, Data: m.data}
		m.mu.Unlock()
	}
	return s
}

// Restore makes s the function's state, before the VM runs: the bus's
// decode is then recomputed from the restored BARs and command register
// (OnBARChange is told, which re-registers a transport's ioeventfds), and
// vectors pending stay pending (a mask holds them, as it did). A state of
// another function's shape (a table of another size, a header that is not
// this function's) is refused, and the function left as it was.
func (f *Function) Restore(s FunctionSaved) error {
	if err := f.checkSaved(s); err != nil {
		return err
	}
	f.mu.Lock()
	copy(f.cfg[:], s.Config)
	f.busMaster.Store(s.Config[regCommand]&CmdBusMaster != 0)
	f.mu.Unlock()
	if m, ms := f.msix, s.MSIX; m != nil {
		m.mu.Lock()
		m.enabled, m.funcMask = ms.Enabled, ms.FuncMask
		for i, e := range ms.Entries {
			m.entries[i] = msixEntry{addrLo: e[0], addrHi: e[1], data: e[2], ctrl: e[3]}
		}
		copy(m.pending, ms.Pending)
		m.mu.Unlock()
	}
	if m, ms := f.msi, s.MSI; m != nil {
		m.mu.Lock()
		m.enabled, m.masked, m.pending = ms.Enabled, ms.Masked, ms.Pending
		m.addrLo, m.addrHi, m.data = ms.AddrLo, ms.AddrHi, ms.Data
		m.mu.Unlock()
	}
	if f.bus != nil {
		f.bus.remap()
	}
	return nil
}

// checkSaved refuses a state that is not this function's.
func (f *Function) checkSaved(s FunctionSaved) error {
	switch {
	case len(s.Config) != cfgSize:
		return fmt.Errorf("pci %s: saved configuration space of %d bytes, want %d", f.addr, len(s.Config), cfgSize)
	case string(s.Config[:regCommand]) != string(f.cfg[:regCommand]):
		return fmt.Errorf("pci %s: the saved function has another vendor or device ID", f.addr)
	case (f.msix == nil) != (s.MSIX == nil) || (f.msi == nil) != (s.MSI == nil):
		return errors.New("pci " + f.addr.String() + ": the saved function's MSI or MSI-X capability differs")
	case f.msix != nil && (len(s.MSIX.Entries) != f.msix.n || len(s.MSIX.Pending) != len(f.msix.pending)):
		return fmt.Errorf("pci %s: saved MSI-X table of %d vectors, the function has %d", f.addr, len(s.MSIX.Entries), f.msix.n)
	}
	return nil
}
