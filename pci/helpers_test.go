package pci

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
)

const (
	testECAM     = 0xB0000000
	testMMIOBase = 0xC0000000
	testMMIOSize = 0x10000000
	testIOBase   = 0xC000
	testIOSize   = 0x1000
)

var testHeader = Header{VendorID: 0x1af4, DeviceID: 0x1042, SubsystemVendorID: 0x1af4, SubsystemID: 0x0002,
	Class: 0x010000, Revision: 1}

// region is a BAR region that remembers its bytes.
type region struct {
	mu  sync.Mutex
	mem []byte
	n   int // accesses
}

func newRegion(size int) *region { return &region{mem: make([]byte, size)} }

func (r *region) ReadBAR(off uint64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	copy(data, r.mem[off:])
}

func (r *region) WriteBAR(off uint64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	copy(r.mem[off:], data)
}

// msg is one MSI the sink received.
type msg struct {
	addr uint64
	data uint32
	sid  uint16
}

// sink records MSIs and accepts them (unless refuse).
type sink struct {
	mu     sync.Mutex
	got    []msg
	refuse bool
}

func (s *sink) fn(_ int, addr uint64, data uint32, sid uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, msg{addr, data, sid})
	return !s.refuse
}

func (s *sink) take() []msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.got
	s.got = nil
	return g
}

// hookCap is a capability whose body is writable through SetCapBytes.
type hookCap struct {
	f   *Function
	off int
}

func (h *hookCap) ReadCap(off int, data []byte) {}
func (h *hookCap) WriteCap(off int, data []byte) {
	h.f.SetCapBytes(h.off+off, data)
}

// rig is a bus with one test function at 00:01.0: BAR0 32-bit memory
// (16 KiB: MSI-X table at 0, PBA at 0x2000, region elsewhere), BAR2 64-bit
// memory (64 KiB, prefetchable), BAR4 I/O (32 bytes), a vendor capability
// (ID 9, 6 writable body bytes) and 4 MSI-X vectors.
type rig struct {
	bus              *Bus
	f                *Function
	msix             *MSIX
	r0, r2, r4       *region
	sink             *sink
	vendorCap, msixC int
	ranges           map[string]exitbus.Range
	acc              exitbus.Access
}

const (
	rigVectors = 4
	rigPBA     = 0x2000
)

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{r0: newRegion(16 << 10), r2: newRegion(64 << 10), r4: newRegion(32), sink: &sink{}}
	b, err := NewBus(Config{ECAMBase: testECAM, MMIOBase: testMMIOBase, MMIOSize: testMMIOSize,
		IOBase: testIOBase, IOSize: testIOSize}, r.sink.fn)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFunction(testHeader)
	must(t, f.SetBAR(0, BAR{Kind: BARMem32, Size: 16 << 10, Region: r.r0}))
	must(t, f.SetBAR(2, BAR{Kind: BARMem64, Size: 64 << 10, Prefetchable: true, Region: r.r2,
		Cause: func(off uint64, write bool) exitcause.Cause { return exitcause.VirtioConfig }}))
	must(t, f.SetBAR(4, BAR{Kind: BARIO, Size: 32, Region: r.r4}))
	h := &hookCap{f: f}
	off, err := f.AddCapability(0x09, make([]byte, 6), h)
	must(t, err)
	h.off, r.vendorCap = off, off
	m, err := f.AddMSIX(rigVectors, BARLocation{BAR: 0, Off: 0}, BARLocation{BAR: 0, Off: rigPBA})
	must(t, err)
	r.msix, r.msixC = m, f.caps[len(f.caps)-1].off
	if _, err := b.Add(f); err != nil {
		t.Fatal(err)
	}
	r.bus, r.f = b, f
	r.ranges = map[string]exitbus.Range{}
	for _, x := range b.Ranges() {
		r.ranges[x.Name] = x
	}
	return r
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// do runs one access through the named range's handler and returns what
// it was charged (for HandlerCharges ranges) and the data.
func (r *rig) do(t testing.TB, name string, addr uint64, write bool, data []byte) exitcause.Cause {
	t.Helper()
	x, ok := r.ranges[name]
	if !ok {
		t.Fatalf("no range %q", name)
	}
	r.acc.Reset(0, addr, x.Base, write, nil)
	r.acc.Data = data
	if err := x.Handler.Access(&r.acc); err != nil {
		t.Fatal(err)
	}
	if c, ok := r.acc.Charged(); ok {
		return c
	}
	c, _ := x.Cause.Of(r.acc.Off, write)
	return c
}

func ecamAddr(dev, fn int, reg uint64) uint64 {
	return testECAM + uint64(dev)<<15 + uint64(fn)<<12 + reg
}

// cfgRead reads n bytes of 00:dev.0's config space through ECAM.
func (r *rig) cfgRead(t testing.TB, dev int, reg uint64, n int) uint32 {
	t.Helper()
	d := make([]byte, n)
	r.do(t, "pci ecam", ecamAddr(dev, 0, reg), false, d)
	return leN(d)
}

func (r *rig) cfgWrite(t testing.TB, dev int, reg uint64, n int, v uint32) {
	t.Helper()
	d := make([]byte, n)
	putN(d, uint64(v))
	r.do(t, "pci ecam", ecamAddr(dev, 0, reg), true, d)
}

func (r *rig) mmio(t testing.TB, addr uint64, write bool, n int, v uint64) (uint64, exitcause.Cause) {
	t.Helper()
	d := make([]byte, n)
	putN(d, v)
	c := r.do(t, "pci mmio window", addr, write, d)
	return uint64(leN(d)) | uint64(leN64hi(d))<<32, c
}

func leN(d []byte) uint32 {
	var v uint32
	for i := 0; i < len(d) && i < 4; i++ {
		v |= uint32(d[i]) << (8 * i)
	}
	return v
}

func leN64hi(d []byte) uint32 {
	if len(d) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint32(d[4:])
}

func putN(d []byte, v uint64) {
	for i := range d {
		d[i] = byte(v >> (8 * i))
	}
}

// enable sets the command register's memory, I/O and bus master bits.
func (r *rig) enable(t testing.TB) { r.cfgWrite(t, 1, regCommand, 2, CmdIO|CmdMemory|CmdBusMaster) }

// bar0 is BAR0's base.
func (r *rig) bar0(t testing.TB) uint64 {
	b, _ := r.f.BARBase(0)
	return b
}

// setupVector programs MSI-X entry v with address and data and leaves it
// unmasked (mask false) or masked.
func (r *rig) setupVector(t testing.TB, v int, addr uint64, data uint32, mask bool) {
	t.Helper()
	e := r.bar0(t) + uint64(v)*16
	r.mmio(t, e, true, 8, addr)
	r.mmio(t, e+8, true, 4, uint64(data))
	ctrl := uint64(0)
	if mask {
		ctrl = 1
	}
	r.mmio(t, e+12, true, 4, ctrl)
}

// msixControl writes the MSI-X message control word.
func (r *rig) msixControl(t testing.TB, enable, fmask bool) {
	t.Helper()
	v := uint32(rigVectors - 1)
	if enable {
		v |= msixCtrlEnable
	}
	if fmask {
		v |= msixCtrlFuncMask
	}
	r.cfgWrite(t, 1, uint64(r.msixC)+2, 2, v)
}
