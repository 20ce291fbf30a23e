// Package exitbus routes govmm's PIO, MMIO and MSR exits to their handlers:
// one map of address ranges, each registered once with its handler, its
// accounting cause and a name, in the style of crosvm's Bus. Every device,
// APIC register block and paravirtual feature claims its ranges here; a
// vCPU serves an exit with one Lookup and one call; the MSR filter that
// makes KVM hand MSRs it knows to user space is built from the ranges that
// ask for it (FilteredMSRs); Map lists everything for reports.
//
// Two kinds of range:
//
//   - fixed ranges, the same for every vCPU (a device's ports, the IOAPIC
//     page, an MSR). A handler that keeps per-vCPU state (the x2APIC MSRs
//     of each vCPU's own LAPIC, PV EOI) indexes it by Access.CPU.
//   - movable per-vCPU ranges (the xAPIC page, which APIC_BASE relocates and
//     which is there only while that vCPU's APIC is in xAPIC mode): their
//     base is asked of At at each exit, and they are consulted before the
//     fixed ranges, as a CPU's own APIC page shadows whatever else is at
//     that address.
//
// Overlapping registrations are an error naming both ranges (for a
// movable range, at its reset base). Unclaimed addresses are the caller's
// to answer (PIO reads all ones, MMIO reads all ones and ignores writes,
// MSRs #GP).
//
// Concurrency: Register runs while the VM is built, before any vCPU runs;
// from then on the bus is read-only and Lookup, Map and FilteredMSRs take no
// lock and may run on any thread. Handlers are called on the exiting vCPU's
// thread, several vCPUs at once: a handler guards state it shares between
// vCPUs; per-vCPU state indexed by Access.CPU belongs to that vCPU's thread.
package exitbus

import (
	"fmt"
	"sort"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
)

// Space is an address space an exit names an address in.
type Space uint8

const (
	PIO  Space = iota // I/O ports, 0-0xFFFF
	MMIO              // guest-physical addresses not backed by RAM
	MSR               // model-specific registers (RDMSR/WRMSR that reach user space)
	numSpaces
)

func (s Space) String() string {
	switch s {
	case PIO:
		return "pio"
	case MMIO:
		return "mmio"
	case MSR:
		return "msr"
	}
	return fmt.Sprintf("space(%d)", uint8(s))
}

// MarshalText names the space in JSON ("pio", "mmio", "msr"), as in Map's
// text form.
func (s Space) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a space's name back.
func (s *Space) UnmarshalText(b []byte) error {
	for c := range numSpaces {
		if string(b) == c.String() {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown address space %q (pio, mmio or msr)", b)
}

// Access is one exit's access as a handler sees it. The vCPU reuses one
// Access for all its exits: a handler must not keep it.
type Access struct {
	CPU   int    // index of the exiting vCPU
	Addr  uint64 // port, guest-physical address or MSR index
	Off   uint64 // Addr less the range's base
	Write bool
	// Data holds the bytes of a PIO or MMIO access, little-endian: those
	// written, or those to fill on a read (one element of a string PIO
	// instruction at a time).
	Data []byte
	// Value is an MSR access's EDX:EAX: the value written, or the one a
	// read returns (set by the handler).
	Value uint64
	// Settled is set by a handler whose access left the exiting vCPU's
	// own interrupt state with nothing to act on (an EOI that left its
	// LAPIC with no vector requested: vlapic.Effect.Settled), so that the
	// vCPU's next entry may skip its look.
	Settled bool
	// cause is what the handler of a HandlerCharges range charged (Charge).
	cause   exitcause.Cause
	charged bool
	// VCPU is the exiting vCPU, for handlers that need more than the
	// access itself (registers, exceptions).
	VCPU VCPU
}

// Reset readies a for an access at addr to a range at base.
func (a *Access) Reset(cpu int, addr, base uint64, write bool, v VCPU) {
	*a = Access{CPU: cpu, Addr: addr, Off: addr - base, Write: write, VCPU: v}
}

// Charge sets what the access is charged, for the handler of a range
// registered with HandlerCharges.
func (a *Access) Charge(c exitcause.Cause) { a.cause, a.charged = c, true }

// Charged returns what the handler charged, if it did.
func (a *Access) Charged() (exitcause.Cause, bool) { return a.cause, a.charged }

// VCPU is what a handler may ask of the vCPU whose exit it serves (package
// vcpu implements it). Valid during the call only.
type VCPU interface {
	// KVM is the vCPU's KVM object: this exit's general registers are in
	// KVM().RunData().Sync.Regs (mark them dirty in DirtyRegs to change
	// them).
	KVM() KVM
	// Sregs returns this exit's segment and control registers, read on
	// first use; edits need kvm.SyncRegsSregs in DirtyRegs.
	Sregs() (*kvm.Sregs, error)
	// WithdrawInjection takes back an interrupt KVM holds for injection
	// and returns its vector to the LAPIC.
	WithdrawInjection() error
	// InjectException queues an exception for the next entry (code: the
	// error code, nil for none).
	InjectException(vector uint8, code *uint32) error
}

// KVM is what a handler may ask of the KVM vCPU itself (*kvm.VCPU, or a
// unit test's fake of it).
type KVM interface {
	// RunData is the shared kvm_run page of the exit being served.
	RunData() *kvm.Run
	// SetRegs is KVM_SET_REGS.
	SetRegs(r kvm.Regs) error
	// GetMSR and SetMSR are host-initiated KVM_GET_MSRS / KVM_SET_MSRS.
	GetMSR(index uint32) (uint64, error)
	SetMSR(index uint32, v uint64) error
}

var _ KVM = (*kvm.VCPU)(nil)

// Handler serves accesses to a range. For an MSR, an error wrapping
// vlapic.ErrGP answers the guest with #GP(0); any other error is govmm's
// own failure and stops the VM.
type Handler interface {
	Access(a *Access) error
}

// HandlerFunc is a function as a Handler.
type HandlerFunc func(a *Access) error

func (f HandlerFunc) Access(a *Access) error { return f(a) }

// Cause is how an access to a range is charged in the exit accounting:
// one cause, one for reads and one for writes, one computed from the
// register (the offset) and direction, or whatever the handler decides.
type Cause struct {
	fixed, write exitcause.Cause
	rw           bool
	of           func(off uint64, write bool) exitcause.Cause
	late         bool
}

// Fixed charges every access c.
func Fixed(c exitcause.Cause) Cause { return Cause{fixed: c} }

// ReadWrite charges reads r and writes w.
func ReadWrite(r, w exitcause.Cause) Cause { return Cause{fixed: r, write: w, rw: true} }

// ByAccess charges what f says of the offset into the range and the
// direction (an APIC register, the IOAPIC's select or window).
func ByAccess(f func(off uint64, write bool) exitcause.Cause) Cause { return Cause{of: f} }

// HandlerCharges leaves the cause to the handler, which calls Access.Charge:
// for a range whose cause depends on what the access turns out to be (the
// SYSCALL doorbell: genuine or forged). It is charged after the handler
// returns (if the handler called Access.Charge); every other cause is charged before the handler runs (the
// accounting-window marker relies on its own exit being counted).
var HandlerCharges = Cause{late: true}

// Of returns what an access at off is charged before its handler runs,
// and false for HandlerCharges.
func (c *Cause) Of(off uint64, write bool) (exitcause.Cause, bool) {
	switch {
	case c.late:
		return 0, false
	case c.of != nil:
		return c.of(off, write), true
	case c.rw && write:
		return c.write, true
	}
	return c.fixed, true
}

// Deferred reports HandlerCharges: the handler charges the access.
func (c *Cause) Deferred() bool { return c.late }

// Range is one registration.
type Range struct {
	Space Space
	Base  uint64 // for a movable range, its base at reset
	Len   uint64
	Name  string
	Cause Cause
	Handler
	// Filter: an MSR range KVM would otherwise serve itself (or drop);
	// the MSR filter denies it so that its accesses exit to user space.
	Filter bool
	// PerCPU: each vCPU has its own instance behind the range (the
	// handler tells them apart by Access.CPU). For the map.
	PerCPU bool
	// At makes the range movable and per vCPU: it returns where the range
	// is for that vCPU now, and false while it is not there at all.
	At func(cpu int) (base uint64, ok bool)
	// LoopServed marks a movable range that each vCPU's loop serves
	// itself, before it asks the bus, when the device behind it is the
	// vCPU's own (its xAPIC page: vcpu's handleMMIO checks its LAPIC's
	// base first). LookupOthers, which such a loop calls once its own
	// check missed, skips it; Lookup still finds it.
	LoopServed bool
}

// End is the first address after the range.
func (r *Range) End() uint64 { return r.Base + r.Len }

func (r *Range) String() string {
	return fmt.Sprintf("%s %#x-%#x %s", r.Space, r.Base, r.End()-1, r.Name)
}

// Bus is the VM's map of ranges; the zero value is empty and ready.
type Bus struct {
	// fixed is sorted by Base, disjoint, and held by value, a new array
	// at each Register (a Range Lookup returned stays as it was): Lookup's
	// binary search and the Range it finds are then one array, where
	// pointers cost a port lookup four pages (the pointer array, a Range
	// per probe). Under an emulated host (nested AMD-V: QEMU TCG flushes
	// its software TLB at each world switch) every page a VMM touches
	// between two entries costs the exit about 500 cycles
	// (docs/exit-cost.md).
	fixed   [numSpaces][]Range
	movable [numSpaces][]*Range // consulted first
	// others is movable without the LoopServed ranges (LookupOthers):
	// their At (the LAPICs' bases) would cost an MMIO exit pages of its own
	// to find what the loop already knows.
	others [numSpaces][]*Range
}

// Register adds r. It fails when r is empty, wraps around, or overlaps a
// range already registered in its space (a movable range at its reset
// base), and the error names both.
func (b *Bus) Register(r Range) error {
	if r.Space >= numSpaces {
		return fmt.Errorf("exitbus: %s: unknown address space", r.Name)
	}
	if r.Len == 0 || r.Base+r.Len < r.Base || r.Handler == nil {
		return fmt.Errorf("exitbus: %s: empty range, wraps around or has no handler", &r)
	}
	for _, o := range b.ranges(r.Space) {
		if r.Base < o.End() && o.Base < r.End() {
			return fmt.Errorf("exitbus: %s overlaps %s", &r, o)
		}
	}
	if r.At != nil {
		b.movable[r.Space] = append(b.movable[r.Space], &r)
		if !r.LoopServed {
			b.others[r.Space] = append(b.others[r.Space], &r)
		}
		return nil
	}
	list := append(append(make([]Range, 0, len(b.fixed[r.Space])+1), b.fixed[r.Space]...), r)
	sort.Slice(list, func(i, j int) bool { return list[i].Base < list[j].Base })
	b.fixed[r.Space] = list
	return nil
}

// ranges is every range of space s, fixed then movable.
func (b *Bus) ranges(s Space) []*Range {
	list := make([]*Range, 0, len(b.fixed[s])+len(b.movable[s]))
	for i := range b.fixed[s] {
		list = append(list, &b.fixed[s][i])
	}
	return append(list, b.movable[s]...)
}

// Lookup finds the range that serves vCPU cpu's access at addr: its own
// movable ranges first, then one binary search of the fixed ones. nil: the
// address is unclaimed.
func (b *Bus) Lookup(cpu int, s Space, addr uint64) (r *Range, base uint64) {
	return b.lookup(b.movable[s], cpu, s, addr)
}

// LookupOthers is Lookup for a vCPU's loop that has served its
// LoopServed ranges itself and found addr in none of them.
func (b *Bus) LookupOthers(cpu int, s Space, addr uint64) (r *Range, base uint64) {
	return b.lookup(b.others[s], cpu, s, addr)
}

func (b *Bus) lookup(movable []*Range, cpu int, s Space, addr uint64) (r *Range, base uint64) {
	for _, m := range movable {
		if at, ok := m.At(cpu); ok && addr-at < m.Len {
			return m, at
		}
	}
	list := b.fixed[s]
	lo, hi := 0, len(list)
	for lo < hi { // the first range that ends after addr
		mid := int(uint(lo+hi) >> 1)
		if list[mid].End() <= addr {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(list) && list[lo].Base <= addr {
		return &list[lo], list[lo].Base
	}
	return nil, 0
}

// Entry is one line of the map.
type Entry struct {
	Space   Space  `json:"space"`
	Base    uint64 `json:"base"`
	End     uint64 `json:"end"` // last address, inclusive
	Name    string `json:"name"`
	PerCPU  bool   `json:"per_cpu,omitempty"`
	Movable bool   `json:"movable,omitempty"` // at its reset base; each vCPU may move it
	Filter  bool   `json:"msr_filter,omitempty"`
}

func (e Entry) String() string {
	s := fmt.Sprintf("%-4s 0x%08x-0x%08x  %s", e.Space, e.Base, e.End, e.Name)
	switch {
	case e.Movable:
		s += " (per vCPU, movable: reset base)"
	case e.PerCPU:
		s += " (per vCPU)"
	}
	if e.Filter {
		s += " [MSR filter]"
	}
	return s
}

// Map lists every range by space, then base.
func (b *Bus) Map() []Entry {
	var out []Entry
	for s := range numSpaces {
		list := b.ranges(s)
		sort.Slice(list, func(i, j int) bool { return list[i].Base < list[j].Base })
		for _, r := range list {
			out = append(out, Entry{Space: s, Base: r.Base, End: r.End() - 1, Name: r.Name,
				PerCPU: r.PerCPU || r.At != nil, Movable: r.At != nil, Filter: r.Filter})
		}
	}
	return out
}

// FilteredMSRs lists the MSR ranges registered with Filter, by index.
func (b *Bus) FilteredMSRs() []*Range {
	var out []*Range
	for i := range b.fixed[MSR] {
		if r := &b.fixed[MSR][i]; r.Filter {
			out = append(out, r)
		}
	}
	return out
}
