// Test helpers: guest memory as a byte slice, a recording Interrupter, and a
// driver that programs the unit the way Linux's dmar.c and irq_remapping.c do.

package vintremap

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/govmm/govmm/vlapic"
)

// fakeMem is guest RAM from GPA 0; accesses beyond it fail.
type fakeMem struct{ b []byte }

var errBadGPA = errors.New("fakeMem: address outside RAM")

func newMem(size int) *fakeMem { return &fakeMem{b: make([]byte, size)} }

func (m *fakeMem) ReadGPA(gpa uint64, b []byte) error {
	if gpa > uint64(len(m.b)) || uint64(len(b)) > uint64(len(m.b))-gpa {
		return errBadGPA
	}
	copy(b, m.b[gpa:])
	return nil
}

func (m *fakeMem) WriteGPA(gpa uint64, b []byte) error {
	if gpa > uint64(len(m.b)) || uint64(len(b)) > uint64(len(m.b))-gpa {
		return errBadGPA
	}
	copy(m.b[gpa:], b)
	return nil
}

func (m *fakeMem) put64(gpa, v uint64) { binary.LittleEndian.PutUint64(m.b[gpa:], v) }
func (m *fakeMem) get32(gpa uint64) uint32 {
	return binary.LittleEndian.Uint32(m.b[gpa:])
}

// msi is one interrupt the unit raised.
type msi struct {
	addr uint64
	data uint32
}

// fakeIRQ records the unit's own interrupts.
type fakeIRQ struct{ got []msi }

func (f *fakeIRQ) MSI(addr uint64, data uint32) { f.got = append(f.got, msi{addr, data}) }

// take returns and forgets what was raised.
func (f *fakeIRQ) take() []msi {
	g := f.got
	f.got = nil
	return g
}

// Guest layout used by the tests.
const (
	memSize    = 4 << 20
	irtAddr    = 0x100000 // 65536 entries * 16 bytes
	iqAddr     = 0x200000 // 256 descriptors
	statusAddr = 0x201000
)

// rig is a unit with its memory and interrupter.
type rig struct {
	t    testing.TB
	u    *Unit
	mem  *fakeMem
	irq  *fakeIRQ
	gcmd uint32 // Linux's iommu->gcmd: the enables it has set
	tail uint32 // next free descriptor
}

func newRig(t testing.TB, opts Options) *rig {
	mem, irq := newMem(memSize), &fakeIRQ{}
	return &rig{t: t, u: New(mem, irq, opts), mem: mem, irq: irq}
}

func (r *rig) w32(off uint64, v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	r.u.WriteMMIO(off, b[:])
}

func (r *rig) w64(off uint64, v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	r.u.WriteMMIO(off, b[:])
}

func (r *rig) r32(off uint64) uint32 {
	var b [4]byte
	r.u.ReadMMIO(off, b[:])
	return binary.LittleEndian.Uint32(b[:])
}

func (r *rig) r64(off uint64) uint64 {
	var b [8]byte
	r.u.ReadMMIO(off, b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// command writes gcmd|bit like Linux and checks GSTS reached want under mask
// (IOMMU_WAIT_OP: the status must be there on the first poll).
func (r *rig) command(bit uint32, mask, want uint32) {
	r.t.Helper()
	r.w32(RegGCMD, r.gcmd|bit)
	if got := r.r32(RegGSTS); got&mask != want {
		r.t.Fatalf("GCMD %#x: GSTS %#x, want %#x under %#x", r.gcmd|bit, got, want, mask)
	}
}

// enableQI is dmar_enable_qi: IQT=0, IQA, QIE, wait for QIES.
func (r *rig) enableQI() {
	r.t.Helper()
	r.w32(RegIQT, 0)
	r.w64(RegIQA, iqAddr)
	r.gcmd |= gQIE
	r.command(0, GSTSQIES, GSTSQIES)
	r.tail = 0
}

// setTable is iommu_set_irq_remapping: IRTA (65536 entries, EIME as asked),
// SIRTP, wait for IRTPS, then a global IEC flush since ESIRTPS is clear.
func (r *rig) setTable(eime bool) {
	r.t.Helper()
	irta := uint64(irtAddr | 0xF)
	if eime {
		irta |= 1 << 11
	}
	r.w64(RegIRTA, irta)
	r.command(gSIRTP, GSTSIRTPS, GSTSIRTPS)
	r.submit([2]uint64{descIEC, 0})
}

// enableIR is iommu_enable_irq_remapping: IRE, wait for IRES, then clear CFI
// if CFIS is set.
func (r *rig) enableIR() {
	r.t.Helper()
	r.gcmd |= gIRE
	r.command(0, GSTSIRES, GSTSIRES)
	if r.r32(RegGSTS)&GSTSCFIS != 0 {
		r.gcmd &^= gCFI
		r.command(0, GSTSCFIS, 0)
	}
}

// linux brings the unit up as Linux does.
func (r *rig) linux(eime bool) {
	r.t.Helper()
	r.enableQI()
	r.setTable(eime)
	r.enableIR()
}

// submit is qi_submit_sync: the descriptors, then a wait descriptor with a
// status write and fence, then IQT; it checks the status and IQE.
func (r *rig) submit(descs ...[2]uint64) {
	r.t.Helper()
	const done = 1
	r.mem.put64(statusAddr, 0)
	descs = append(descs, [2]uint64{descWait | waitSW | 1<<6 | done<<32, statusAddr})
	for _, d := range descs {
		a := uint64(iqAddr + r.tail*16)
		r.mem.put64(a, d[0])
		r.mem.put64(a+8, d[1])
		r.tail = (r.tail + 1) % 256
	}
	r.w32(RegIQT, r.tail<<4)
	if st := r.mem.get32(statusAddr); st != done {
		r.t.Fatalf("wait status %d, want %d (FSTS %#x)", st, done, r.r32(RegFSTS))
	}
	if h := r.r32(RegIQH); h != r.tail<<4 {
		r.t.Fatalf("IQH %#x, want %#x", h, r.tail<<4)
	}
}

// irte builds a remapped-format IRTE.
type irte struct {
	p, fpd, dm, rh, tm bool
	dlm                vlapic.DeliveryMode
	vector             uint8
	dst                uint32 // as stored: xAPIC ID<<8 or x2APIC ID
	sid                uint16
	sq, svt            uint8
}

func (e irte) words() (lo, hi uint64) {
	b := func(v bool, n uint) uint64 {
		if v {
			return 1 << n
		}
		return 0
	}
	lo = b(e.p, 0) | b(e.fpd, 1) | b(e.dm, 2) | b(e.rh, 3) | b(e.tm, 4) |
		uint64(e.dlm)<<5 | uint64(e.vector)<<16 | uint64(e.dst)<<32
	hi = uint64(e.sid) | uint64(e.sq)<<16 | uint64(e.svt)<<18
	return lo, hi
}

// setIRTE writes entry index of the table at irtAddr.
func (r *rig) setIRTE(index int, e irte) {
	lo, hi := e.words()
	r.setRaw(index, lo, hi)
}

func (r *rig) setRaw(index int, lo, hi uint64) {
	r.mem.put64(uint64(irtAddr+index*16), lo)
	r.mem.put64(uint64(irtAddr+index*16+8), hi)
}

// remappableMSI is the address and data Linux programs for an IRTE index
// and subhandle (intel_ir_compose_msi_msg: SHV always set).
func remappableMSI(handle uint32, shv bool, sub uint16) (uint64, uint32) {
	addr := uint64(0xFEE00000 | 1<<4 | (handle&0x7FFF)<<5 | (handle>>15&1)<<2)
	if shv {
		addr |= 1 << 3
	}
	return addr, uint32(sub)
}

// wantFault checks err is a Fault with reason.
func wantFault(t *testing.T, err error, reason uint8) Fault {
	t.Helper()
	var f Fault
	if !errors.As(err, &f) || f.Reason != reason {
		t.Fatalf("err %v, want fault %#x", err, reason)
	}
	return f
}
