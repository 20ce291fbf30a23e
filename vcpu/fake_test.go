package vcpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
)

// A scripted fake of the KVM vCPU (Hardware), with no /dev/kvm: each Run
// is one step of a script. The fake models what the loop relies on:
//   - KVM_INTERRUPT queues a vector, which the guest takes at the next
//     entry unless the step holds it (then it is in the exit's
//     interrupt_bitmap and KVM_GET_VCPU_EVENTS, as when an exit comes
//     before the host delivered it);
//   - an MSR exit answered with an error is #GP at the next entry;
//   - immediate_exit makes Run return EINTR at once (without running a
//     step), and a step may wait in the guest until it is set (a kick);
//   - registers marked dirty in kvm_run are loaded at entry, and the sync
//     copies hold the registers at every exit.

// step is one KVM_RUN of the script.
type step struct {
	reason uint32 // the exit reason
	// ready, ifFlag: ready_for_interrupt_injection and if_flag at the exit.
	ready, ifFlag bool
	// guest runs while the step is in the guest, after the queued vector
	// (if any) was taken: a guest action (clear the PV EOI bit, edit
	// registers) or something from outside the vCPU (an IPI).
	guest func(f *fakeCPU)
	// waitKick: stay in the guest until immediate_exit is set, then return
	// EINTR (the kick signal ended KVM_RUN).
	waitKick bool
	// signal: a host signal that is no kick (Go's preemption SIGURG, let
	// through with RawRun) ends KVM_RUN with EINTR, the guest having made
	// no exit.
	signal bool
	// hold: a vector queued with KVM_INTERRUPT is not taken in this step.
	hold bool
	// The exit's payload.
	io     kvm.IOExit
	ioData []byte
	mmio   kvm.MMIOExit
	msr    kvm.MSRExit
}

// entry is what the loop asked for at one KVM_RUN.
type entry struct {
	window    bool // request_interrupt_window
	inject    int  // vector queued with KVM_INTERRUPT for this entry; -1: none
	exception int  // exception queued for this entry (SetEvents or an MSR error); -1: none
	immediate bool // immediate_exit was set: no step ran
}

var errScriptEnd = errors.New("fake: end of script")

type fakeCPU struct {
	run    kvm.Run
	script []step
	n      int // steps run

	immediate atomic.Bool
	kicked    chan struct{} // filled by SetImmediateExit(true)
	inGuest   chan struct{} // filled when a waitKick step is in the guest

	regs   kvm.Regs
	sregs  kvm.Sregs
	queued int // vector queued with KVM_INTERRUPT, not taken; -1: none
	exc    int // exception queued by SetEvents; -1: none
	// nmiMasked: NMIs blocked (the guest is in an NMI handler), as
	// KVM_GET/SET_VCPU_EVENTS show and set it (nmi.masked).
	nmiMasked bool
	debugRegs *kvm.DebugRegs // the last KVM_SET_DEBUGREGS; nil: none
	// refuseDebugRegs makes KVM_SET_DEBUGREGS fail.
	refuseDebugRegs bool
	last            *step

	entries   []entry
	injected  []uint8 // every KVM_INTERRUPT
	nmis      int
	smis      int
	saves     int   // SaveState calls
	restores  int   // RestoreState calls
	nmiErr    error // what KVM_NMI answers (nil: it queues the NMI)
	intErr    error // what KVM_INTERRUPT answers, when set (nil: it queues the vector)
	eventsErr error // what KVM_SET_VCPU_EVENTS answers, when set
	setEvents int
	sregsGets int // KVM_GET_SREGS calls
	msrs      map[uint32]uint64
	sigmask   uint64
	rawRuns   int // KVM_RUNs entered through RunRaw

	// onRun, when set, is called at every KVM_RUN (before it returns).
	onRun func()

	internal kvm.InternalExit
	emul     kvm.EmulationFailure // KVM's report of an emulation failure
	failE    kvm.FailEntryExit
	sysE     kvm.SystemEventExit
}

func newFake(script ...step) *fakeCPU {
	return &fakeCPU{script: script, queued: -1, exc: -1, kicked: make(chan struct{}, 1),
		inGuest: make(chan struct{}, 1), msrs: map[uint32]uint64{}}
}

var _ Hardware = (*fakeCPU)(nil)

func (f *fakeCPU) RunData() *kvm.Run { return &f.run }

func (f *fakeCPU) RunRaw() error {
	f.rawRuns++
	return f.Run()
}

func (f *fakeCPU) Run() error {
	var mask unix.Sigset_t // the thread's, as KVM_RUN would run with it
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &mask); err != nil {
		return err
	}
	f.sigmask = mask.Val[0]
	if f.onRun != nil {
		f.onRun()
	}
	e := entry{window: f.run.RequestInterruptWindow != 0, inject: f.queued, exception: f.exc}
	if f.last != nil && (f.last.reason == kvm.ExitX86RDMSR || f.last.reason == kvm.ExitX86WRMSR) && f.last.msr.Error != 0 {
		e.exception = 13 // KVM injects #GP(0)
	}
	if f.run.DirtyRegs&kvm.SyncRegsGPR != 0 {
		f.regs = f.run.Sync.Regs
	}
	if f.run.DirtyRegs&kvm.SyncRegsSregs != 0 {
		f.sregs = f.run.Sync.Sregs
	}
	f.run.DirtyRegs = 0
	if f.immediate.Load() {
		e.immediate = true
		// KVM completes the last exit first: an MSR error is then a
		// pending #GP, and that exit is done with.
		if e.exception >= 0 {
			f.exc = e.exception
		}
		f.last = nil
		if f.queued >= 0 {
			f.run.ReadyForInterruptInjection = 0
		}
		f.entries = append(f.entries, e)
		return unix.EINTR
	}
	f.entries = append(f.entries, e)
	f.exc = -1
	if f.n == len(f.script) {
		return errScriptEnd
	}
	s := &f.script[f.n]
	f.n++
	f.last = s
	// Until the exit, the guest's bitmap shows what is still queued.
	f.sregs.InterruptBitmap = [4]uint64{}
	if f.queued >= 0 && !s.hold {
		f.queued = -1 // taken by the guest
	}
	if f.queued >= 0 {
		f.sregs.InterruptBitmap[f.queued/64] = 1 << (f.queued % 64)
	}
	if s.guest != nil {
		s.guest(f)
	}
	// KVM is not ready for another vector while it holds one.
	f.run.ReadyForInterruptInjection = b2u(s.ready && f.queued < 0)
	f.run.IFFlag = b2u(s.ifFlag)
	f.run.Sync.Regs = f.regs
	if s.waitKick {
		select {
		case f.inGuest <- struct{}{}:
		default:
		}
		select {
		case <-f.kicked:
		case <-time.After(10 * time.Second):
			return errors.New("fake: no kick in 10s")
		}
		return unix.EINTR
	}
	if s.signal {
		return unix.EINTR
	}
	f.run.ExitReason = s.reason
	return nil
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (f *fakeCPU) SetImmediateExit(on bool) {
	f.immediate.Store(on)
	if on {
		select {
		case f.kicked <- struct{}{}:
		default:
		}
	} else {
		select { // a kick consumed by an immediate exit
		case <-f.kicked:
		default:
		}
	}
}

func (f *fakeCPU) SetRequestInterruptWindow(on bool) { f.run.RequestInterruptWindow = b2u(on) }

func (f *fakeCPU) Interrupt(vector uint8) error {
	if f.intErr != nil {
		return f.intErr
	}
	if f.queued >= 0 {
		return unix.EEXIST // KVM: an external vector is already pending
	}
	f.queued = int(vector)
	f.injected = append(f.injected, vector)
	return nil
}

func (f *fakeCPU) NMI() error {
	if f.nmiErr != nil {
		return f.nmiErr
	}
	f.nmis++
	return nil
}

// SaveState is the fake's state as KVM_GET_* would read it: its registers
// (with whatever the last KVM_RUN loaded).
func (f *fakeCPU) SaveState([]uint32, int) (kvm.VCPUState, error) {
	f.saves++
	return kvm.VCPUState{Regs: f.regs, Sregs: f.sregs}, nil
}

// RestoreState loads the fake's registers.
func (f *fakeCPU) RestoreState(s kvm.VCPUState) error {
	f.restores++
	f.regs, f.sregs = s.Regs, s.Sregs
	return nil
}

func (f *fakeCPU) SMI() error {
	f.smis++
	return nil
}

func (f *fakeCPU) Events() (kvm.VCPUEvents, error) {
	var ev kvm.VCPUEvents
	if f.queued >= 0 {
		ev.Interrupt.Injected, ev.Interrupt.Nr = 1, uint8(f.queued)
	}
	if f.exc >= 0 {
		ev.Exception.Injected, ev.Exception.Nr = 1, uint8(f.exc)
	}
	ev.NMI.Masked = b2u(f.nmiMasked)
	return ev, nil
}

func (f *fakeCPU) SetEvents(ev kvm.VCPUEvents) error {
	if f.eventsErr != nil {
		return f.eventsErr
	}
	f.setEvents++
	if ev.Interrupt.Injected == 0 {
		f.queued = -1
	} else {
		f.queued = int(ev.Interrupt.Nr)
	}
	f.exc = -1
	if ev.Exception.Injected != 0 {
		f.exc = int(ev.Exception.Nr)
	}
	f.nmiMasked = ev.NMI.Masked != 0 // KVM sets it whatever the flags say
	return nil
}

func (f *fakeCPU) SetRegs(r kvm.Regs) error   { f.regs = r; return nil }
func (f *fakeCPU) Sregs() (kvm.Sregs, error)  { f.sregsGets++; return f.sregs, nil }
func (f *fakeCPU) SetSregs(s kvm.Sregs) error { f.sregs = s; return nil }

func (f *fakeCPU) GetMSR(index uint32) (uint64, error) {
	v, ok := f.msrs[index]
	if !ok {
		return 0, fmt.Errorf("fake: MSR %#x unknown", index)
	}
	return v, nil
}

func (f *fakeCPU) SetMSR(index uint32, v uint64) error { f.msrs[index] = v; return nil }

func (f *fakeCPU) IO() (*kvm.IOExit, []byte)               { return &f.last.io, f.last.ioData }
func (f *fakeCPU) MMIO() *kvm.MMIOExit                     { return &f.last.mmio }
func (f *fakeCPU) MSR() *kvm.MSRExit                       { return &f.last.msr }
func (f *fakeCPU) Internal() *kvm.InternalExit             { return &f.internal }
func (f *fakeCPU) EmulationFailure() *kvm.EmulationFailure { return &f.emul }
func (f *fakeCPU) FailEntry() *kvm.FailEntryExit           { return &f.failE }
func (f *fakeCPU) SystemEvent() *kvm.SystemEventExit       { return &f.sysE }

var errNoXSAVE = errors.New("fake: no XSAVE")

func (f *fakeCPU) XSAVE([]byte) error    { return errNoXSAVE }
func (f *fakeCPU) SetXSAVE([]byte) error { return errNoXSAVE }
func (f *fakeCPU) XCR0() (uint64, error) { return 0, errNoXSAVE }
func (f *fakeCPU) SetXCR0(uint64) error  { return errNoXSAVE }

func (f *fakeCPU) SetDebugRegs(d kvm.DebugRegs) error {
	if f.refuseDebugRegs {
		return errors.New("fake: KVM_SET_DEBUGREGS: invalid argument")
	}
	f.debugRegs = &d
	return nil
}

// Script steps.

func exitAt(reason uint32, ready, ifFlag bool) step {
	return step{reason: reason, ready: ready, ifFlag: ifFlag}
}

// open is an exit with interrupts open (ready, IF=1).
func open(reason uint32) step { return exitAt(reason, true, true) }

// outb is a one-byte OUT to port, interrupts open.
func outb(port uint16, val byte) step {
	s := open(kvm.ExitIO)
	s.io = kvm.IOExit{Direction: 1, Size: 1, Port: port, Count: 1}
	s.ioData = []byte{val}
	return s
}

// outsb is a rep outsb of data to port, interrupts open.
func outsb(port uint16, data ...byte) step {
	s := outb(port, 0)
	s.io.Count, s.ioData = uint32(len(data)), data
	return s
}

func msrExit(write bool, index uint32, val uint64) step {
	s := open(kvm.ExitX86RDMSR)
	if write {
		s.reason = kvm.ExitX86WRMSR
	}
	s.msr = kvm.MSRExit{Index: index, Data: val}
	return s
}

func mmioWrite(addr uint64, n int) step {
	s := open(kvm.ExitMMIO)
	s.mmio = kvm.MMIOExit{PhysAddr: addr, Len: uint32(n), IsWrite: 1}
	return s
}

// with returns s with a guest action.
func (s step) with(g func(f *fakeCPU)) step { s.guest = g; return s }

// A test clock on real time: the loop arms real host timers from it.
type wallClock struct{ start time.Time }

func (c wallClock) Now() int64  { return int64(time.Since(c.start)) }
func (c wallClock) TSC() uint64 { return uint64(c.Now()) }

// rig is a VM of fake vCPUs around real LAPICs, accounting and exit bus.
type rig struct {
	t     testing.TB
	apics *vlapic.Bus
	acct  *accounting.VM
	obs   *accounting.Observer // counts into acct, as the VM's does; the LAPICs' unless opts named another
	bus   exitbus.Bus
	fakes []*fakeCPU
	cpus  []*VCPU
	done  chan struct{}
	clock wallClock
	pveoi []PVEOI // per vCPU, nil: none (set before start)
	// haltPoll is every vCPU's halt-polling policy (set before start).
	haltPoll haltpoll.Policy
	// noCounters builds the vCPUs with no Counters (set before start).
	noCounters bool
	noSMM      bool // the VM has no SMM (Config.SMM false)
	// yieldEvery is every vCPU's Config.YieldEvery (set before start).
	yieldEvery uint64
	// rawRun is every vCPU's Config.RawRun (set before start).
	rawRun bool
	// muted: the LAPICs' notifications only mark the vCPU notified, as
	// one that finds it out of the guest does (no kick).
	muted atomic.Bool
	// mem is every vCPU's guest memory (set before start; nil: none).
	mem *memory.Memory
}

// sink forwards the LAPICs' notifications to the vCPUs.
type sink struct{ r *rig }

func (s sink) Notify(cpu int) {
	if cs := s.r.cpus; cpu < len(cs) && cs[cpu] != nil {
		if s.r.muted.Load() {
			cs[cpu].notified.Store(true)
			return
		}
		cs[cpu].Notify()
	}
}

func newRig(t testing.TB, n int) *rig { return newRigWith(t, n, vlapic.Options{X2APIC: true}) }

// newRigWith is newRig with the LAPICs' options. Without an observer in
// opts, the LAPICs and vCPUs count into r.acct through r.obs, as a VM's do.
func newRigWith(t testing.TB, n int, opts vlapic.Options) *rig {
	r := &rig{t: t, acct: accounting.NewVM(n), done: make(chan struct{}), clock: wallClock{time.Now()},
		fakes: make([]*fakeCPU, n), pveoi: make([]PVEOI, n)}
	r.obs = accounting.NewObserver(r.acct, r.clock)
	if opts.Observer == nil {
		opts.Observer = r.obs
	}
	r.apics = vlapic.NewBus(n, r.clock, sink{r}, opts)
	for i := range n {
		r.enable(i)
	}
	return r
}

// enable software-enables vCPU i's LAPIC (SVR), as a guest does.
func (r *rig) enable(i int) {
	r.apics.LAPIC(i).WriteMMIO(uint64(vlapic.RegSVR)<<4, []byte{0xFF, 0x01, 0, 0})
}

// register adds a range to the exit bus.
func (r *rig) register(rg exitbus.Range) {
	r.t.Helper()
	if err := r.bus.Register(rg); err != nil {
		r.t.Fatal(err)
	}
}

// build makes the vCPUs; vCPU 0 boots, the others wait for INIT/SIPI.
func (r *rig) build() {
	r.cpus = make([]*VCPU, len(r.fakes))
	for i, f := range r.fakes {
		if f == nil {
			r.t.Fatalf("vCPU %d has no script", i)
		}
		var boot *EntryState
		if i == 0 {
			boot = &EntryState{Regs: kvm.Regs{RIP: 0x1000, RFLAGS: 2}}
		}
		var counts Counters = &r.acct.CPUs[i]
		if r.noCounters {
			counts = nil
		}
		r.cpus[i] = New(i, Config{KVM: f, LAPIC: r.apics.LAPIC(i), Counters: counts, Bus: &r.bus,
			Clock: r.clock, PVEOI: r.pveoi[i], Done: r.done, Boot: boot, HaltPoll: r.haltPoll, YieldEvery: r.yieldEvery, RawRun: r.rawRun, Mem: r.mem, SMM: !r.noSMM})
	}
}

// runOne runs the single vCPU to the end of its script on this goroutine.
func (r *rig) runOne() {
	r.t.Helper()
	r.build()
	r.check(r.cpus[0].Run())
}

func (r *rig) check(err error) {
	r.t.Helper()
	if !errors.Is(err, errScriptEnd) {
		r.t.Fatalf("vCPU loop ended with %v, want the end of the script", err)
	}
}

// start runs every vCPU on its own goroutine; wait collects them.
func (r *rig) start() (wait func()) {
	r.build()
	errs := make([]error, len(r.cpus))
	var wg sync.WaitGroup
	for i, v := range r.cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = v.Run()
		}()
	}
	return func() {
		r.t.Helper()
		ch := make(chan struct{})
		go func() { wg.Wait(); close(ch) }()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			close(r.done)
			r.t.Fatal("vCPU loops still running after 20s")
		}
		for _, err := range errs {
			r.check(err)
		}
	}
}

// waitState waits until vCPU i is in state s.
func (r *rig) waitState(i int, s State) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.cpus[i].State() != s {
		if time.Now().After(deadline) {
			r.t.Fatalf("vCPU %d: state %v, want %v", i, r.cpus[i].State(), s)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// deliver sends a fixed edge vector to vCPU cpu, as an IPI or MSI does.
func (r *rig) deliver(cpu int, vec uint8) {
	r.apics.Deliver(vlapic.Message{Vector: vec, Delivery: vlapic.Fixed, Dest: uint32(cpu), Source: -1})
}

func (r *rig) exits(cpu int, c exitcause.Cause) uint64 { return r.acct.CPUs[cpu].Exits.Load(c) }

// wantExits checks every exit count of vCPU cpu: those in want, zero for
// every other cause.
func (r *rig) wantExits(cpu int, want map[exitcause.Cause]uint64) {
	r.t.Helper()
	for c := exitcause.Cause(0); c < exitcause.NumCauses; c++ {
		if got := r.exits(cpu, c); got != want[c] {
			r.t.Errorf("vCPU %d: %d exits of cause %v, want %d", cpu, got, c, want[c])
		}
	}
}

// wantEntries checks what the loop asked for at each KVM_RUN.
func wantEntries(t *testing.T, f *fakeCPU, want ...entry) {
	t.Helper()
	if len(f.entries) != len(want) {
		t.Fatalf("%d entries %+v, want %d %+v", len(f.entries), f.entries, len(want), want)
	}
	for i := range want {
		if f.entries[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, f.entries[i], want[i])
		}
	}
}

// e is an entry: window requested, vector injected (-1: none).
func e(window bool, inject int) entry { return entry{window: window, inject: inject, exception: -1} }
