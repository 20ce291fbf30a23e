package virtio

import (
	"encoding/binary"
	"sync"
)

// virtio PCI capability types (struct virtio_pci_cap.cfg_type, virtio 1.2
// §4.1.4).
const (
	CapCommonCfg = 1
	CapNotifyCfg = 2
	CapISRCfg    = 3
	CapDeviceCfg = 4
	CapPCICfg    = 5

	// PCICapVendor is the PCI capability ID they all carry.
	PCICapVendor = 0x09
)

// struct virtio_pci_cap, offsets from the capability's start (cap_vndr).
const (
	capLen    = 2
	capType   = 3
	capBAR    = 4
	capID     = 5
	capOffset = 8
	capLength = 12
	capExtra  = 16 // notify_off_multiplier, or pci_cfg_data
	capSize   = 16 // sizeof(struct virtio_pci_cap)
	capSize20 = 20 // notify and pci_cfg capabilities
)

// Capabilities are the bodies of the vendor-specific capabilities that
// describe the BAR (numbered bar) to the driver: for each, the bytes after
// the capability ID and next pointer (cap_len first), in the order
// COMMON, NOTIFY, ISR, DEVICE, PCI_CFG. Linux takes the first of each
// type. The lead attaches PCICfgHook() to the last one. bar is also the
// BAR number the PCI_CFG window accepts (the last one given wins).
func (t *PCITransport) Capabilities(bar uint8) [][]byte {
	t.capBAR.Store(uint32(bar))
	mk := func(typ uint8, size int, off, length uint32, extra uint32) []byte {
		c := make([]byte, size)
		c[capLen], c[capType], c[capBAR] = byte(size), typ, bar
		binary.LittleEndian.PutUint32(c[capOffset:], off)
		binary.LittleEndian.PutUint32(c[capLength:], length)
		if size > capSize {
			binary.LittleEndian.PutUint32(c[capExtra:], extra)
		}
		return c[2:]
	}
	notifyLen := uint32(notifyMult * len(t.maxSizes))
	if notifyLen == 0 {
		notifyLen = notifyMult
	}
	return [][]byte{
		mk(CapCommonCfg, capSize, barCommon, barCommonLen, 0),
		mk(CapNotifyCfg, capSize20, barNotify, notifyLen, notifyMult),
		mk(CapISRCfg, capSize, barISR, barISRLen, 0),
		mk(CapDeviceCfg, capSize, barDevice, barDeviceLen, 0),
		// The window's bar/offset/length/data are the driver's to write.
		mk(CapPCICfg, capSize20, 0, 0, 0),
	}
}

// pciCfgHook serves the VIRTIO_PCI_CAP_PCI_CFG capability (virtio 1.2
// §4.1.4.9): the driver writes bar, offset and length, then reading or
// writing pci_cfg_data reads or writes that many bytes of the BAR there.
// It keeps the fields the driver writes itself; the bytes it does not
// own (ID, next, cap_len, cfg_type, id, padding) are left as the caller
// pre-filled them.
type pciCfgHook struct {
	t *PCITransport

	// mu guards the window registers: config space accesses may come
	// from several vCPUs. Taken before the transport's mu, never after.
	mu   sync.Mutex
	regs [capSize20]byte // capBAR, capOffset.., capLength.., capExtra.. are used
}

// PCICfgHook returns the hook of the PCI_CFG capability (the last of
// Capabilities): off in ReadCap/WriteCap counts from the capability's ID
// byte; ReadCap's data arrives pre-filled with the stored bytes. The
// window reaches the BAR only if the driver names the BAR number given
// to Capabilities. Each call returns a new hook with its own window
// (one per capability: call it once).
func (t *PCITransport) PCICfgHook() interface {
	ReadCap(off int, data []byte)
	WriteCap(off int, data []byte)
} {
	return &pciCfgHook{t: t}
}

// driverOwned reports whether byte off of the capability is a register
// the driver writes.
func driverOwned(off int) bool {
	return off == capBAR || off >= capOffset && off < capSize20
}

// window is the BAR range the registers name, ok if it is a valid one:
// our BAR, length 1, 2 or 4, offset aligned to it, inside the BAR.
func (h *pciCfgHook) window() (off uint64, n int, ok bool) {
	off = uint64(binary.LittleEndian.Uint32(h.regs[capOffset:]))
	length := binary.LittleEndian.Uint32(h.regs[capLength:])
	switch {
	case uint32(h.regs[capBAR]) != h.t.capBAR.Load(), length != 1 && length != 2 && length != 4,
		off%uint64(length) != 0, off+uint64(length) > h.t.BARSize():
		return 0, 0, false
	}
	return off, int(length), true
}

// ReadCap serves a read of the capability at off (from its start) into
// data, pre-filled with the stored bytes.
func (h *pciCfgHook) ReadCap(off int, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if off < capSize20 && off+len(data) > capExtra {
		clear(h.regs[capExtra:])
		if boff, n, ok := h.window(); ok {
			h.t.ReadBAR(boff, h.regs[capExtra:capExtra+n])
		}
	}
	for i := range data {
		if p := off + i; p >= 0 && p < capSize20 && driverOwned(p) {
			data[i] = h.regs[p]
		}
	}
}

// WriteCap serves a write of data to the capability at off.
func (h *pciCfgHook) WriteCap(off int, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	touchesData := false
	for i, b := range data {
		if p := off + i; p >= 0 && p < capSize20 && driverOwned(p) {
			h.regs[p] = b
			touchesData = touchesData || p >= capExtra
		}
	}
	if touchesData {
		if boff, n, ok := h.window(); ok {
			h.t.WriteBAR(boff, h.regs[capExtra:capExtra+n])
		}
	}
}
