package pci

import "testing"

func TestMSI(t *testing.T) {
	s := &sink{}
	b, err := NewBus(Config{ECAMBase: testECAM, MMIOBase: testMMIOBase, MMIOSize: testMMIOSize}, s.fn)
	must(t, err)
	f := NewFunction(testHeader)
	m, err := f.AddMSI()
	must(t, err)
	if _, err := f.AddMSI(); err == nil {
		t.Error("second MSI capability accepted")
	}
	_, err = b.Add(f)
	must(t, err)
	rd := func(off int, n int) uint32 {
		d := make([]byte, n)
		f.ReadConfig(uint64(off), d)
		return leN(d)
	}
	wr := func(off int, n int, v uint32) {
		d := make([]byte, n)
		putN(d, uint64(v))
		f.WriteConfig(uint64(off), d)
	}
	c := int(f.cfg[regCapPtr])
	if got := rd(c, 4); got != uint32(msiCtrl64|msiCtrlPVM)<<16|capIDMSI {
		t.Fatalf("MSI dword 0 = %#x", got)
	}
	wr(c+msiOffAddrLo, 4, 0xFEE01003)
	wr(c+msiOffAddrHi, 4, 0x1)
	wr(c+msiOffData, 2, 0x4041)
	if rd(c+msiOffAddrLo, 4) != 0xFEE01000 || rd(c+msiOffAddrHi, 4) != 1 || rd(c+msiOffData, 2) != 0x4041 {
		t.Error("address/data registers")
	}
	m.Signal(0) // disabled
	wr(c+2, 2, 0xFFFF)
	if got := rd(c+2, 2); got != msiCtrl64|msiCtrlPVM|msiCtrlEnable {
		t.Errorf("control after 0xFFFF = %#x (one vector: MME stays 0)", got)
	}
	m.Signal(0) // bus master off
	wr(regCommand, 2, CmdBusMaster)
	m.Signal(0)
	if got := s.take(); len(got) != 1 || got[0] != (msg{0x1FEE01000, 0x4041, f.Address().SourceID()}) {
		t.Fatalf("delivered %+v", got)
	}
	wr(c+msiOffMask, 4, 1)
	m.Signal(0)
	if rd(c+msiOffPending, 4) != 1 || len(s.take()) != 0 {
		t.Fatal("masked MSI not pending")
	}
	wr(c+msiOffPending, 4, 0) // read-only
	wr(c+msiOffMask, 4, 0)
	if got := s.take(); len(got) != 1 || rd(c+msiOffPending, 4) != 0 {
		t.Fatalf("unmask delivered %+v", got)
	}
	m.Signal(1)
	if d, p, x := m.Counts(0); d != 2 || p != 1 || x != 2 || m.outOfRange.Load() != 1 {
		t.Errorf("counts %d/%d/%d", d, p, x)
	}
}
