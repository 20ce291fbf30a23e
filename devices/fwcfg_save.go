// This file implements fw_cfg's Save and Restore for snapshots.

package devices

import "fmt"

// FwCfgSaved is fw_cfg's state in a snapshot: the item the guest selected
// and how far it has read it. The items themselves are the VM's
// configuration, which the restored VM builds again. Without it, a
// snapshot taken between a guest's select and its reads restored an
// fw_cfg with nothing selected, and the guest read zeros (storm.elf: "cpu
// count 0", TestSnapshotCLI, CI 2026-12-07).
type FwCfgSaved struct {
	Selected bool
	Key      uint16
	Pos      int
}

// Save returns fw_cfg's selection.
func (f *FwCfg) Save() FwCfgSaved {
	f.mu.Lock()
	defer f.mu.Unlock()
	return FwCfgSaved{Selected: f.selected, Key: f.key, Pos: f.pos}
}

// Restore selects v's item again and puts the read position where it
// was. A position past the item's end is refused: the item is not the one
// the snapshot's guest was reading.
func (f *FwCfg) Restore(v FwCfgSaved) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !v.Selected {
		f.key, f.selected, f.sel, f.pos = 0, false, nil, 0
		return nil
	}
	item := f.items[v.Key]
	if v.Pos < 0 || v.Pos > len(item) {
		return fmt.Errorf("fw_cfg: read position %d of item %#x, which has %d bytes", v.Pos, v.Key, len(item))
	}
	f.key, f.selected, f.sel, f.pos = v.Key, true, item, v.Pos
	return nil
}
