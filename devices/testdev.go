package devices

import "sync"

// TestDev is the IRQ-line part of QEMU's pc-testdev: a one-byte write to
// port 0x2000+n sets ISA IRQ line n to the written level. Lines are handed
// to SetLine (the IOAPIC, once it exists); until then levels are only kept.
type TestDev struct {
	mu      sync.Mutex
	levels  [24]bool
	SetLine func(line int, level bool)
}

func (t *TestDev) In(cpu int, port uint16, data []byte) {
	n := int(port - 0x2000)
	t.mu.Lock()
	defer t.mu.Unlock()
	var v uint64
	if n < len(t.levels) && t.levels[n] {
		v = 1
	}
	putLE(data, v)
}

func (t *TestDev) Out(cpu int, port uint16, data []byte) {
	n := int(port - 0x2000)
	if n >= len(t.levels) {
		return
	}
	level := data[0] != 0
	t.mu.Lock()
	t.levels[n] = level
	set := t.SetLine
	t.mu.Unlock()
	if set != nil {
		set(n, level)
	}
}
