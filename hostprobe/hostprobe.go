// Package hostprobe finds out what this host's KVM really does by running
// tiny probe VMs on it, so that govmm configures a VM from measurements
// rather than from module names or CPU flags (docs/hosts.md has the
// behaviours and the KVM functions that decide them).
//
// Each probe is a few instructions of 32-bit protected-mode code on one
// vCPU of a VM built like govmm's own (no in-kernel irqchip, user-space MSR
// exits for invalid, unknown and filtered MSRs, govmm's MSR filter):
//
//   - emulates: "pxor %xmm0, %xmm0" in kernel mode. Hardware virtualization
//     runs it; a KVM that interprets guest kernel code (kvm_pvm) gives up
//     on it (KVM_EXIT_INTERNAL_ERROR, emulation). Such a host also leaves
//     SYSCALL from CPL3 at CPL3, so govmm's SYSCALL doorbell follows it.
//   - tsc-deadline: WRMSR to IA32_TSC_DEADLINE (0x6E0), claimed by the MSR
//     filter. On VMX with the preemption timer, KVM's fast path
//     (handle_fastpath_set_msr_irqoff -> handle_fastpath_set_tscdeadline)
//     runs before the filter is consulted, and with no in-kernel APIC
//     kvm_set_lapic_tscdeadline_msr drops the write: the probe then sees
//     HLT, not the WRMSR. govmm advertises TSC-deadline mode only where the
//     write reaches it.
//   - x2apic-msrs: RDMSR of 0x802 (x2APIC ID) must reach user space
//     (reason "invalid": KVM has no APIC to answer it).
//   - claimed MSRs: RDMSR of every MSR govmm's filter claims.
//   - ioeventfd: an OUT to a port registered with KVM_IOEVENTFD must cost
//     no exit and signal the eventfd (virtio queue notifications).
//   - exit round trip: a loop of OUT instructions, timed.
//
// The decisions that follow from the answers are pure functions (Decide)
// tested with fake answers.
package hostprobe

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
)

// Answers is what the probes found.
type Answers struct {
	Emulates           bool            `json:"emulates_kernel_code"`
	TSCDeadlineReaches bool            `json:"tsc_deadline_reaches_govmm"`
	X2APICMSRsReach    bool            `json:"x2apic_msrs_reach_govmm"`
	ClaimedMSRs        map[string]bool `json:"claimed_msrs_reach_govmm"`
	IOEventFD          bool            `json:"ioeventfd"`
	// IOEventFDMMIO: a 16-bit MMIO write to an address with an ioeventfd
	// costs no exit either (virtio's queue notifications are MMIO writes).
	IOEventFDMMIO   bool              `json:"ioeventfd_mmio"`
	ExitRoundTripNs float64           `json:"exit_round_trip_ns"`
	Caps            map[string]bool   `json:"capabilities"`
	Notes           map[string]string `json:"notes,omitempty"` // what each probe saw instead, where it matters
}

// Claimed is an MSR govmm claims with its MSR filter.
type Claimed struct {
	Name  string
	Index uint32
}

// Capabilities govmm relies on or uses when present.
var capabilities = []struct {
	name string
	cap  int
}{
	{"KVM_CAP_X86_USER_SPACE_MSR", kvm.CapX86UserSpaceMSR}, {"KVM_CAP_X86_MSR_FILTER", kvm.CapX86MSRFilter},
	{"KVM_CAP_IMMEDIATE_EXIT", kvm.CapImmediateExit}, {"KVM_CAP_SYNC_REGS", kvm.CapSyncRegs},
	{"KVM_CAP_VCPU_EVENTS", kvm.CapVCPUEvents}, {"KVM_CAP_GET_TSC_KHZ", kvm.CapGetTSCKHz},
	{"KVM_CAP_BINARY_STATS_FD", kvm.CapBinaryStatsFD}, {"KVM_CAP_XSAVE", kvm.CapXSAVE},
	{"KVM_CAP_XCRS", kvm.CapXCRs}, {"KVM_CAP_XSAVE2", kvm.CapXSAVE2}, {"KVM_CAP_IOEVENTFD", kvm.CapIOEventFD},
	{"KVM_CAP_PMU_CAPABILITY", kvm.CapPMUCapability},
}

// Probe code, 32-bit protected mode, at codeGPA.
var (
	codePXOR        = []byte{0x66, 0x0F, 0xEF, 0xC0, 0xF4}                                           // pxor %xmm0,%xmm0; hlt
	codeTSCDeadline = []byte{0xB9, 0xE0, 0x06, 0, 0, 0xB8, 1, 0, 0, 0, 0x31, 0xD2, 0x0F, 0x30, 0xF4} // wrmsr 0x6E0 <- 1; hlt
	codeOutNotify   = []byte{0xBA, 0x81, 0, 0, 0, 0xEE, 0xF4}                                        // mov $0x81,%edx; out %al,(%dx); hlt
	codeMMIONotify  = []byte{0xBA, 0, 0, 0, 0xD0, 0x66, 0x89, 0x02, 0xF4}                            // mov $mmioNotifyGPA,%edx; mov %ax,(%edx); hlt
	codeOutLoop     = []byte{0xBA, 0x80, 0, 0, 0, 0xEE, 0xEB, 0xFD}                                  // mov $0x80,%edx; 1: out %al,(%dx); jmp 1b
	codeRDMSR       = func(idx uint32) []byte {
		return []byte{0xB9, byte(idx), byte(idx >> 8), byte(idx >> 16), byte(idx >> 24), 0x0F, 0x32, 0xF4}
	}
)

const (
	codeGPA   = 0x1000
	memSize   = 2 << 20
	tscDLMSR  = 0x6E0
	x2APICID  = 0x802
	roundTrip = 2000 // OUT exits timed
)

// Probe runs every probe on the KVM at path. claimed are the MSRs govmm's
// filter claims (the probe VM claims them too).
func Probe(path string, claimed []Claimed) (Answers, error) {
	a := Answers{ClaimedMSRs: map[string]bool{}, Caps: map[string]bool{}, Notes: map[string]string{}}
	sys, err := kvm.Open(path)
	if err != nil {
		return a, err
	}
	defer sys.Close()
	for _, c := range capabilities {
		a.Caps[c.name] = sys.CheckExtension(c.cap) != 0
	}
	// The vCPU's signal mask (newProbeVM) is set for this thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p, err := newProbeVM(sys, claimed)
	if err != nil {
		return a, err
	}
	defer p.close()

	ex, err := p.run(codePXOR)
	if err != nil {
		return a, err
	}
	a.Emulates = ex.reason == kvm.ExitInternalError
	if ex.reason != kvm.ExitHLT && !a.Emulates {
		a.Notes["emulates"] = ex.String()
	}

	ex, err = p.run(codeTSCDeadline)
	if err != nil {
		return a, err
	}
	a.TSCDeadlineReaches = ex.reason == kvm.ExitX86WRMSR && ex.msr == tscDLMSR
	if !a.TSCDeadlineReaches {
		a.Notes["tsc_deadline"] = "the WRMSR did not reach govmm: " + ex.String()
	}

	if ex, err = p.run(codeRDMSR(x2APICID)); err != nil {
		return a, err
	}
	a.X2APICMSRsReach = ex.reason == kvm.ExitX86RDMSR && ex.msr == x2APICID
	for _, c := range claimed {
		if ex, err = p.run(codeRDMSR(c.Index)); err != nil {
			return a, err
		}
		a.ClaimedMSRs[c.Name] = ex.reason == kvm.ExitX86RDMSR && ex.msr == c.Index
	}

	if a.IOEventFD, err = p.ioeventfd(kvm.IOEventFD{Addr: 0x81, Len: 1, Flags: kvm.IOEventFDFlagPIO}, codeOutNotify); err != nil {
		a.Notes["ioeventfd"] = err.Error()
	}
	if a.IOEventFDMMIO, err = p.ioeventfd(kvm.IOEventFD{Addr: mmioNotifyGPA, Len: 2}, codeMMIONotify); err != nil {
		a.Notes["ioeventfd_mmio"] = err.Error()
	}

	if a.ExitRoundTripNs, err = p.timeExits(); err != nil {
		return a, err
	}
	return a, nil
}

// Decide is what govmm configures from the answers and the user's
// settings: TSC-deadline mode only where its writes reach govmm (forced
// with on/off), the SYSCALL doorbell only where SYSCALL needs it.
type Decision struct {
	TSCDeadline bool `json:"tsc_deadline_advertised"`
	Doorbell    bool `json:"syscall_doorbell"`
}

// Setting is a user's auto/on/off choice.
type Setting int

// Settings.
const (
	Auto Setting = iota
	On
	Off
)

// ParseSetting reads an auto/on/off flag value.
func ParseSetting(flag, s string) (Setting, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "on":
		return On, nil
	case "off":
		return Off, nil
	}
	return Auto, fmt.Errorf("%s=%q: want auto, on or off", flag, s)
}

// Resolve applies a setting to what the host supports.
func (s Setting) Resolve(measured bool) bool {
	switch s {
	case On:
		return true
	case Off:
		return false
	}
	return measured
}

// Decide derives govmm's configuration.
func Decide(a Answers, tscDeadline, doorbell Setting) Decision {
	return Decision{TSCDeadline: tscDeadline.Resolve(a.TSCDeadlineReaches), Doorbell: doorbell.Resolve(a.Emulates)}
}

// probeVM is one VM with one vCPU and 2 MiB of RAM.
type probeVM struct {
	vm  *kvm.VM
	cpu *kvm.VCPU
	mem *memory.Memory
}

func newProbeVM(sys *kvm.System, claimed []Claimed) (*probeVM, error) {
	vm, err := sys.CreateVM()
	if err != nil {
		return nil, err
	}
	p := &probeVM{vm: vm}
	fail := func(err error) (*probeVM, error) { p.close(); return nil, err }
	if err := vm.EnableCap(kvm.CapX86UserSpaceMSR, kvm.MSRExitReasonInval|kvm.MSRExitReasonUnknown|kvm.MSRExitReasonFilter); err != nil {
		return fail(err)
	}
	ranges := []kvm.MSRRange{{Base: tscDLMSR, Allow: []bool{false}, Read: true, Write: true}}
	for _, c := range claimed {
		ranges = append(ranges, kvm.MSRRange{Base: c.Index, Allow: []bool{false}, Read: true, Write: true})
	}
	if err := vm.SetMSRFilter(ranges); err != nil {
		return fail(err)
	}
	if err := vm.SetIdentityMapAddr(0xFFFBC000); err != nil {
		return fail(err)
	}
	if err := vm.SetTSSAddr(0xFFFBD000); err != nil {
		return fail(err)
	}
	if p.mem, err = memory.New(memSize); err != nil {
		return fail(err)
	}
	for i, r := range p.mem.Regions {
		if err := vm.SetUserMemoryRegion(uint32(i), r.GPA, r.Host); err != nil {
			return fail(err)
		}
	}
	if p.cpu, err = vm.CreateVCPU(0); err != nil {
		return fail(err)
	}
	// No signal may end a probe's KVM_RUN (Go's preemption SIGURG would,
	// with EINTR): all are blocked inside it (govmm's vCPU threads block
	// them on the thread itself, vcpu/sigmask.go).
	if err := p.cpu.SetSignalMask(^uint64(0)); err != nil {
		return fail(err)
	}
	return p, nil
}

func (p *probeVM) close() {
	if p.cpu != nil {
		p.cpu.Close()
	}
	if p.mem != nil {
		p.mem.Close()
	}
	p.vm.Close()
}

// exit is how a probe's run ended.
type exit struct {
	reason uint32
	msr    uint32
	detail string
}

func (e exit) String() string {
	names := map[uint32]string{kvm.ExitHLT: "HLT", kvm.ExitInternalError: "internal error", kvm.ExitX86RDMSR: "RDMSR",
		kvm.ExitX86WRMSR: "WRMSR", kvm.ExitIO: "port I/O", kvm.ExitMMIO: "MMIO", kvm.ExitShutdown: "shutdown"}
	n, ok := names[e.reason]
	if !ok {
		n = fmt.Sprintf("exit reason %d", e.reason)
	}
	return n + e.detail
}

// flat32 is 32-bit protected mode, flat segments, paging off, SSE on.
func (p *probeVM) enter(code []byte) error {
	if err := p.mem.Write(codeGPA, code); err != nil {
		return err
	}
	s, err := p.cpu.Sregs()
	if err != nil {
		return err
	}
	seg := func(typ uint8, sel uint16) kvm.Segment {
		return kvm.Segment{Limit: 0xFFFFFFFF, Selector: sel, Type: typ, Present: 1, S: 1, DB: 1, G: 1}
	}
	s.CS = seg(0xB, 0x8)
	s.DS, s.ES, s.FS, s.GS, s.SS = seg(3, 0x10), seg(3, 0x10), seg(3, 0x10), seg(3, 0x10), seg(3, 0x10)
	s.CR0 = 0x33  // PE MP ET NE
	s.CR4 = 0x600 // OSFXSR OSXMMEXCPT: SSE usable
	s.EFER = 0
	if err := p.cpu.SetSregs(s); err != nil {
		return err
	}
	return p.cpu.SetRegs(kvm.Regs{RIP: codeGPA, RFLAGS: 2, RSP: 0x8000})
}

// run executes code until its first exit. An MSR exit is answered (0, no
// error) and the vCPU run on to the probe's HLT, since KVM completes the
// access at the next KVM_RUN (moving RIP past it): left pending, that would
// land on the next probe's code.
func (p *probeVM) run(code []byte) (exit, error) {
	if err := p.enter(code); err != nil {
		return exit{}, err
	}
	if err := p.cpu.Run(); err != nil {
		return exit{}, fmt.Errorf("probe KVM_RUN: %w", err)
	}
	r := p.cpu.RunData()
	e := exit{reason: r.ExitReason}
	switch r.ExitReason {
	case kvm.ExitX86RDMSR, kvm.ExitX86WRMSR:
		m := p.cpu.MSR()
		e.msr = m.Index
		e.detail = fmt.Sprintf(" of %#x", m.Index)
		m.Error, m.Data = 0, 0
		if err := p.cpu.Run(); err != nil {
			return exit{}, fmt.Errorf("probe KVM_RUN: %w", err)
		}
		if r.ExitReason != kvm.ExitHLT {
			return exit{}, fmt.Errorf("probe: %s, then exit %d, want HLT", e, r.ExitReason)
		}
	case kvm.ExitMMIO, kvm.ExitIO:
		// A write that exited (an ioeventfd that did not take it): KVM
		// finishes the instruction at the next KVM_RUN, which then
		// reaches the probe's HLT.
		if err := p.cpu.Run(); err != nil {
			return exit{}, fmt.Errorf("probe KVM_RUN: %w", err)
		}
		if r.ExitReason != kvm.ExitHLT {
			return exit{}, fmt.Errorf("probe: %s, then exit %d, want HLT", e, r.ExitReason)
		}
	case kvm.ExitInternalError:
		e.detail = fmt.Sprintf(", sub-error %d", p.cpu.Internal().Suberror)
	}
	return e, nil
}

// mmioNotifyGPA is where the MMIO ioeventfd probe writes: not RAM, as a
// PCI BAR is not.
const mmioNotifyGPA = 0xD0000000

// ioeventfd registers ev (its FD filled in here) and runs code, which
// writes to ev's address and halts: it works when the write cost no exit
// (the vCPU's next exit is its HLT) and the eventfd counted one write. KVM
// serves the write in its I/O bus (kvm_io_bus_write from the PIO or MMIO
// exit handler: ioeventfd_write in virt/kvm/eventfd.c) before any exit to
// user space is built, where the host lets it.
func (p *probeVM) ioeventfd(ev kvm.IOEventFD, code []byte) (bool, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(fd)
	ev.FD = int32(fd)
	if err := p.vm.SetIOEventFD(ev); err != nil {
		return false, err
	}
	defer func() {
		ev.Flags |= kvm.IOEventFDFlagDeassign
		p.vm.SetIOEventFD(ev)
	}()
	ex, err := p.run(code)
	if err != nil {
		return false, err
	}
	var b [8]byte
	n, _ := unix.Read(fd, b[:])
	if ex.reason != kvm.ExitHLT || n != 8 || b[0] != 1 {
		return false, fmt.Errorf("the write to an ioeventfd address gave %s and %d bytes from the eventfd", ex, n)
	}
	return true, nil
}

// timeExits runs the OUT loop for roundTrip exits and returns the time per
// exit round trip (KVM_RUN to the exit and back), in ns.
func (p *probeVM) timeExits() (float64, error) {
	if err := p.enter(codeOutLoop); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := range roundTrip {
		if err := p.cpu.Run(); err != nil {
			return 0, fmt.Errorf("probe KVM_RUN: %w", err)
		}
		if r := p.cpu.RunData().ExitReason; r != kvm.ExitIO {
			return 0, fmt.Errorf("exit round trip probe: exit %d after %d OUTs, want port I/O", r, i)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / roundTrip, nil
}

// ErrNoKVM is returned where /dev/kvm cannot be opened.
var ErrNoKVM = errors.New("hostprobe: no KVM")
