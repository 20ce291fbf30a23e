package pci

import (
	"sync"
	"testing"

	"github.com/govmm/govmm/exitcause"
)

func TestMSIXCapability(t *testing.T) {
	r := newRig(t)
	c := uint64(r.msixC)
	if got := r.cfgRead(t, 1, c, 4); got != uint32(rigVectors-1)<<16|capIDMSIX {
		t.Errorf("MSI-X dword 0 = %#x", got)
	}
	if got := r.cfgRead(t, 1, c+4, 4); got != 0 { // table at 0 of BAR0
		t.Errorf("table offset/BIR = %#x", got)
	}
	if got := r.cfgRead(t, 1, c+8, 4); got != rigPBA {
		t.Errorf("PBA offset/BIR = %#x", got)
	}
	r.cfgWrite(t, 1, c, 4, 0xFFFFFFFF) // a dword write from the ID: only Enable and Function Mask stick
	if got := r.cfgRead(t, 1, c, 4); got != (0xC000|uint32(rigVectors-1))<<16|uint32(0)<<8|capIDMSIX {
		t.Errorf("after all ones: %#x", got)
	}
	if !r.msix.Enabled() {
		t.Error("not enabled")
	}
	r.cfgWrite(t, 1, c+4, 4, 0xFFFFFFFF)
	if got := r.cfgRead(t, 1, c+4, 4); got != 0 {
		t.Errorf("table offset writable: %#x", got)
	}
	r.msixControl(t, false, false)
	if r.msix.Enabled() || r.msix.Vectors() != rigVectors {
		t.Error("disable or Vectors")
	}
}

func TestAddMSIXErrors(t *testing.T) {
	f := NewFunction(testHeader)
	must(t, f.SetBAR(0, BAR{Kind: BARMem32, Size: 4096}))
	must(t, f.SetBAR(1, BAR{Kind: BARIO, Size: 32}))
	for _, c := range []struct {
		n          int
		table, pba BARLocation
	}{
		{0, BARLocation{0, 0}, BARLocation{0, 0x800}},
		{2049, BARLocation{0, 0}, BARLocation{0, 0x800}},
		{4, BARLocation{1, 0}, BARLocation{0, 0x800}},   // I/O BAR
		{4, BARLocation{2, 0}, BARLocation{0, 0x800}},   // unused BAR
		{4, BARLocation{0, 4}, BARLocation{0, 0x800}},   // unaligned
		{4, BARLocation{0, 0}, BARLocation{0, 0x20}},    // overlap
		{256, BARLocation{0, 0}, BARLocation{0, 0xF00}}, // table runs past the BAR
	} {
		if _, err := f.AddMSIX(c.n, c.table, c.pba); err == nil {
			t.Errorf("AddMSIX(%d, %+v, %+v) succeeded", c.n, c.table, c.pba)
		}
	}
}

func TestMSIXTable(t *testing.T) {
	r := newRig(t)
	r.enable(t)
	b := r.bar0(t)
	for v := range rigVectors {
		if got, c := r.mmio(t, b+uint64(v)*16+12, false, 4, 0); got != 1 || c != exitcause.MMIOMSIXTable {
			t.Errorf("vector %d control %#x (charged %v), want masked", v, got, c)
		}
	}
	r.mmio(t, b+16, true, 8, 0x00000001FEE01003)
	r.mmio(t, b+24, true, 4, 0x4041)
	r.mmio(t, b+28, true, 4, 0xFFFFFFFE)
	if got, _ := r.mmio(t, b+16, false, 8, 0); got != 0x00000001FEE01000 {
		t.Errorf("address %#x (bits 1:0 read 0)", got)
	}
	if got, _ := r.mmio(t, b+24, false, 8, 0); got != 0x4041 {
		t.Errorf("data/control qword %#x (reserved control bits read 0)", got)
	}
	for _, c := range []struct {
		off uint64
		n   int
	}{{16, 2}, {16, 1}, {18, 4}, {20, 8}} {
		if got, _ := r.mmio(t, b+c.off, false, c.n, 0); got != 1<<(8*c.n)-1 {
			t.Errorf("table %#x/%d = %#x, want all ones", c.off, c.n, got)
		}
	}
	r.mmio(t, b+24, true, 2, 0) // ignored
	if got, _ := r.mmio(t, b+24, false, 4, 0); got != 0x4041 {
		t.Errorf("word write changed data to %#x", got)
	}
	// PBA read-only; past it, the region.
	r.mmio(t, b+rigPBA, true, 8, 0xF)
	if got, c := r.mmio(t, b+rigPBA, false, 8, 0); got != 0 || c != exitcause.MMIOMSIXTable {
		t.Errorf("PBA %#x charged %v", got, c)
	}
	r.mmio(t, b+rigPBA+8, true, 4, 0xCAFE)
	if got, c := r.mmio(t, b+rigPBA+8, false, 4, 0); got != 0xCAFE || c != exitcause.PCIBAR {
		t.Errorf("region after the PBA: %#x charged %v", got, c)
	}
	// Past the last vector is the region too.
	r.mmio(t, b+rigVectors*16, true, 4, 0xBEEF)
	if r.r0.mem[rigVectors*16] != 0xEF {
		t.Error("write after the table did not reach the region")
	}
}

func counts(m *MSIX, v int) [3]uint64 {
	d, p, x := m.Counts(v)
	return [3]uint64{d, p, x}
}

func TestMSIXSignal(t *testing.T) {
	r := newRig(t)
	m := r.msix
	sid := r.f.Address().SourceID()
	r.cfgWrite(t, 1, regCommand, 2, CmdMemory)
	r.setupVector(t, 1, 0xFEE00000, 0x31, false)
	m.Signal(1) // MSI-X disabled
	r.msixControl(t, true, false)
	m.Signal(1) // bus master off
	if got := counts(m, 1); got != [3]uint64{0, 0, 2} || len(r.sink.take()) != 0 {
		t.Fatalf("counts %v, want 2 dropped", got)
	}
	r.enable(t)
	m.Signal(1)
	if got := r.sink.take(); len(got) != 1 || got[0] != (msg{0xFEE00000, 0x31, sid}) {
		t.Fatalf("delivered %+v", got)
	}
	// Vector masked: pending, then delivered on unmask with the entry's
	// current address and data.
	r.mmio(t, r.bar0(t)+16+12, true, 4, 1)
	m.Signal(1)
	m.Signal(1)
	if !m.Pending(1) || len(r.sink.take()) != 0 {
		t.Fatal("masked vector not pending")
	}
	if got, _ := r.mmio(t, r.bar0(t)+rigPBA, false, 4, 0); got != 2 {
		t.Errorf("PBA %#x, want bit 1", got)
	}
	r.mmio(t, r.bar0(t)+16+8, true, 4, 0x32)
	r.mmio(t, r.bar0(t)+16+12, true, 4, 0)
	if got := r.sink.take(); len(got) != 1 || got[0].data != 0x32 || m.Pending(1) {
		t.Fatalf("unmask delivered %+v (pending %v)", got, m.Pending(1))
	}
	// Function mask: pending, delivered when cleared.
	r.setupVector(t, 3, 0xFEE02000, 0x40, false)
	r.msixControl(t, true, true)
	m.Signal(1)
	m.Signal(3)
	if len(r.sink.take()) != 0 || !m.Pending(1) || !m.Pending(3) {
		t.Fatal("function mask did not pend")
	}
	r.msixControl(t, true, false)
	if got := r.sink.take(); len(got) != 2 || m.Pending(1) || m.Pending(3) {
		t.Fatalf("function unmask delivered %+v", got)
	}
	// Pending across disable and bus master off: kept, delivered when both return.
	r.msixControl(t, true, true)
	m.Signal(3)
	r.msixControl(t, false, false)
	if !m.Pending(3) || len(r.sink.take()) != 0 {
		t.Fatal("pending bit lost on disable")
	}
	r.cfgWrite(t, 1, regCommand, 2, CmdMemory)
	r.msixControl(t, true, false)
	if !m.Pending(3) || len(r.sink.take()) != 0 {
		t.Fatal("delivered with bus master off")
	}
	r.enable(t)
	if m.Pending(3) || len(r.sink.take()) != 1 {
		t.Fatal("bus master on did not deliver the pending vector")
	}
	// Out of range, and a refusing sink.
	m.Signal(rigVectors)
	m.Signal(0xFFFF)
	if m.OutOfRange() != 2 {
		t.Errorf("out of range %d", m.OutOfRange())
	}
	r.sink.refuse = true
	m.Signal(1)
	if got := counts(m, 1); got != [3]uint64{3, 3, 3} {
		t.Errorf("vector 1 counts %v, want 3 delivered, 3 pended, 3 dropped", got)
	}
	if got := counts(m, 3); got != [3]uint64{2, 2, 0} {
		t.Errorf("vector 3 counts %v", got)
	}
}

// TestMSIXConcurrent signals from several goroutines while a vCPU masks
// and unmasks and rewrites the entry: no Signal is lost (each is
// delivered, pended or dropped) and every pending bit is released at the end.
func TestMSIXConcurrent(t *testing.T) {
	r := newRig(t)
	r.enable(t)
	r.msixControl(t, true, false)
	for v := range rigVectors {
		r.setupVector(t, v, 0xFEE00000, uint32(v), false)
	}
	const perG, gs = 3000, 3
	var wg sync.WaitGroup
	for g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				r.msix.Signal(uint16((g + i) % rigVectors))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := r.bar0(t)
		d := make([]byte, 4)
		for i := range 2000 {
			v := uint64(i % rigVectors)
			putN(d, uint64(i%2))
			r.msix.access(0, v*16+12, true, d)
			putN(d, uint64(i))
			r.msix.access(0, v*16+8, true, d)
			if i%100 == 0 {
				r.f.WriteConfig(uint64(r.msixC)+3, []byte{byte(0x80 | 0x40*(i/100%2))})
			}
		}
		_ = b
	}()
	wg.Wait()
	<-done
	r.msixControl(t, true, false)
	for v := range rigVectors {
		r.mmio(t, r.bar0(t)+uint64(v)*16+12, true, 4, 0)
	}
	var total, delivered uint64
	for v := range rigVectors {
		if r.msix.Pending(v) {
			t.Errorf("vector %d still pending after unmask", v)
		}
		d, p, x := r.msix.Counts(v)
		total += p + x
		delivered += d
		total += d
	}
	sent := uint64(len(r.sink.take()))
	if sent != delivered {
		t.Errorf("sink got %d, counted %d delivered", sent, delivered)
	}
	// delivered counts pending releases too; each release follows at least
	// one pended Signal, so delivered + pended + dropped >= Signals.
	if total < perG*gs {
		t.Errorf("counters sum to %d, fewer than %d Signals", total, perG*gs)
	}
}
