package vcpu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/xstate"
)

// PVEOI is the vCPU loop's side of PV EOI (package pveoi): the vCPU calls
// these at fixed points, all on its own thread.
type PVEOI interface {
	// Sync completes an EOI the guest did through its PV EOI word: before
	// each entry looks for a vector to inject, in a halt, at a kick.
	Sync()
	// Complete takes the offer back before a nested vector is injected
	// (the first one then needs a real EOI unless the guest already did
	// it).
	Complete()
	// Offer sets the guest's bit for the vector just injected, which the
	// LAPIC allowed to be EOIed that way (vlapic.LAPIC.AcknowledgePV).
	Offer()
	// Retract clears the guest's bit for an injection withdrawn.
	Retract()
	// Reset is INIT: PV EOI off, nothing pending.
	Reset()
}

type noPVEOI struct{}

func (noPVEOI) Sync()     {}
func (noPVEOI) Complete() {}
func (noPVEOI) Offer()    {}
func (noPVEOI) Retract()  {}
func (noPVEOI) Reset()    {}

// Config wires a vCPU to the rest of the VM.
type Config struct {
	// KVM is the virtual CPU the loop drives (a *kvm.VCPU).
	KVM   Hardware
	LAPIC *vlapic.LAPIC
	Acct  *accounting.VCPU
	// Bus serves the vCPU's PIO, MMIO and MSR exits (read-only once the
	// vCPU runs).
	Bus   *exitbus.Bus
	Clock vlapic.Clock
	// Mem is guest RAM, for completing instructions with memory operands.
	Mem *memory.Memory
	// PVEOI is this vCPU's PV EOI state (package pveoi); nil: none.
	PVEOI PVEOI
	// XState is the vCPU's XSAVE layout (from its CPUID), for completing
	// the XSAVE family where the host's emulator cannot; nil leaves them
	// to KVM. XSAVESize is KVM's XSAVE image size (KVM_CAP_XSAVE2).
	XState    *xstate.Layout
	XSAVESize int
	// Done is closed when the VM ends; every loop then returns.
	Done <-chan struct{}
	// Boot is the register state of the BSP; nil makes the vCPU an AP that
	// waits for INIT/SIPI.
	Boot *EntryState
	// HaltPoll is how the vCPU's thread polls for a wake-up after HLT
	// before it sleeps (package haltpoll); the zero Policy never polls.
	HaltPoll haltpoll.Policy
	// Signature is CPUID.1 EAX as the vCPU's CPUID table gives it
	// (family, model, stepping): RDX after INIT, as KVM's own INIT leaves
	// it (kvm_vcpu_reset); 0 gives KVM's default, 0x600.
	Signature uint32
	// Symbols gives the table that names guest kernel addresses in dumps,
	// read on the first dump (a vmlinux's symbols take a moment to load);
	// nil, or a nil table, prints bare addresses.
	Symbols func() *ksyms.Table
}

// VCPU is one virtual CPU and its run loop.
//
// Concurrency: everything not marked otherwise belongs to the vCPU's own
// thread. state, kickPending and tid are atomics read by Notify from other
// threads; wake is a one-slot channel anyone may fill.
type VCPU struct {
	id    int
	kvm   Hardware
	lapic *vlapic.LAPIC
	acct  *accounting.VCPU
	bus   *exitbus.Bus
	acc   exitbus.Access // the exit being served (handleIO, handleMMIO, handleMSR)
	pveoi PVEOI
	clock vlapic.Clock
	mem   *memory.Memory
	done  <-chan struct{}
	boot  *EntryState
	sig   uint32 // Config.Signature, or 0x600

	state       atomic.Uint32
	kickPending atomic.Bool
	tid         atomic.Int32
	pid         int
	wake        chan struct{}
	dumpTo      atomic.Pointer[io.Writer]
	syms        func() *ksyms.Table

	// sregsFresh: run.Sync.Sregs holds this exit's segment and control
	// registers (read by sregs). Cleared by every KVM_RUN.
	sregsFresh bool
	// exceptionQueued: this exit's handler made KVM deliver an exception at
	// the next entry (injected with KVM_SET_VCPU_EVENTS, or an MSR access
	// answered with an error, which KVM turns into #GP). Cleared by every
	// KVM_RUN.
	exceptionQueued bool

	xstate   *xstate.Layout // nil: the XSAVE family is not completed here
	xsaveBuf []byte         // KVM's XSAVE image, reused by every completion

	prevExitRIP uint64 // RIP at the last exit handled (a shutdown on AMD has none of its own)
	// log is the vCPU's last exits, kicks, injections, INITs and SIPIs,
	// which an emulation failure's message and the USR2 dump print. Only
	// this vCPU's thread touches it.
	log eventLog

	events     vlapic.Events // latched LAPIC events not yet acted on
	cr8        uint64        // CR8 handed to KVM at the last entry
	timer      *time.Timer
	timerAt    int64
	timerArmed bool

	poll *haltpoll.Window // how long the next halt polls

	windowFor int // the vector the interrupt window was asked for; -1: none
}

// New builds the vCPU; nothing runs until Run.
func New(id int, c Config) *VCPU {
	installKickHandler()
	v := &VCPU{id: id, kvm: c.KVM, lapic: c.LAPIC, acct: c.Acct, bus: c.Bus, pveoi: c.PVEOI, clock: c.Clock, mem: c.Mem,
		done: c.Done, boot: c.Boot, syms: c.Symbols, pid: os.Getpid(), wake: make(chan struct{}, 1), poll: haltpoll.New(c.HaltPoll)}
	if v.pveoi == nil {
		v.pveoi = noPVEOI{}
	}
	v.sig = c.Signature
	if v.sig == 0 {
		v.sig = 0x600
	}
	if c.XState != nil {
		v.xstate, v.xsaveBuf = c.XState, make([]byte, max(c.XSAVESize, kvm.XSAVEMinSize))
	}
	v.timer = time.AfterFunc(time.Hour, v.timerFired)
	v.timer.Stop()
	return v
}

// ID returns the vCPU index.
func (v *VCPU) ID() int { return v.id }

// State returns where the vCPU is now (racy by nature; for display).
func (v *VCPU) State() State { return State(v.state.Load()) }

// KickPending tells whether a kick was sent (Notify) that no return from
// KVM_RUN has answered yet. Any thread may call it (the watchdog).
func (v *VCPU) KickPending() bool { return v.kickPending.Load() }

// Error is a fatal vCPU error: the VM stops and govmm reports it.
type Error struct {
	CPU int
	Err error
}

func (e *Error) Error() string { return fmt.Sprintf("vCPU %d: %v", e.CPU, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Run is the vCPU loop. It returns nil when the VM ends (Done closed) and an
// *Error when this vCPU cannot go on.
func (v *VCPU) Run() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	v.tid.Store(int32(unix.Gettid()))
	defer v.state.Store(uint32(StateStopped))
	defer v.timer.Stop()

	// Only the kick may interrupt KVM_RUN. Any other signal reaching this
	// thread in the guest (Go's preemption SIGURG, which sysmon sends to a
	// goroutine that has run 10 ms without rescheduling, as a vCPU loop
	// does; SIGCHLD, SIGINT and other process signals the kernel may route
	// here) would end KVM_RUN with EINTR: an exit the guest did not cause,
	// on the accounting of a guest that counts its own. Blocked inside
	// KVM_RUN only, such a signal is taken as soon as KVM_RUN returns.
	if err := v.kvm.SetSignalMask(^uint64(0) &^ (1 << (kickSignal - 1))); err != nil {
		return &Error{v.id, fmt.Errorf("KVM_SET_SIGNAL_MASK: %w", err)}
	}
	run := v.kvm.RunData()
	// KVM stores the general registers in kvm_run at every exit; the
	// segment and control registers only when a handler asks (sregs): on
	// VMX storing them costs a dozen VMCS reads that most exits never use.
	run.ValidRegs = kvm.SyncRegsGPR
	if v.boot != nil {
		if err := v.boot.apply(v.kvm); err != nil {
			return &Error{v.id, err}
		}
	} else if err := v.waitSIPI(); errors.Is(err, errStop) {
		return nil
	} else if err != nil {
		return &Error{v.id, err}
	}
	for {
		if v.stopped() {
			return nil
		}
		v.state.Store(uint32(StateGuest))
		if err := v.prepareEntry(); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return &Error{v.id, err}
		}
		err := v.kvm.Run()
		v.state.Store(uint32(StateVMM))
		v.afterRun()
		v.syncCR8(run)
		v.maybeDump(run)
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				v.log.add(evKick, 0, run.Sync.Regs.RIP)
				v.acct.Exit(v.kickCause())
				continue
			}
			return &Error{v.id, fmt.Errorf("KVM_RUN: %w", err)}
		}
		if err := v.handleExit(run); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return &Error{v.id, err}
		}
	}
}

// kickCause tells a kick that brought work (an interrupt, NMI, INIT or
// SIPI to act on, or the VM's end) from one that raced an exit and found
// nothing: the kick protocol can cost at most one such spurious exit.
// A PV EOI the guest has done is completed first, as prepareEntry will:
// until then its vector still holds PPR up and would hide the new one.
func (v *VCPU) kickCause() accounting.Cause {
	if p := v.look(); p.Work() || v.stopped() {
		v.charge(p.Fixed, p.Vector, accounting.ChargeKick)
		return accounting.CauseKick
	}
	return accounting.CauseKickSpurious
}

// look is what the LAPIC has for this vCPU now, as one value: a PV EOI the
// guest did is completed first (its vector would hide a lower one), the
// LAPIC's new events are latched with those not yet acted on, and the
// pending vector is looked for (TakePending folds the AVIC backing page).
// The events in the value are all the latched ones (v.events).
func (v *VCPU) look() vlapic.Pending {
	v.pveoi.Sync()
	p := v.lapic.TakePending()
	v.latch(p.Events)
	p.Events = v.events
	return p
}

// enter is look with the timer's tick, CR8 and the timer's deadline, in
// one LAPIC lock round trip (vlapic.LAPIC.Enter) where Tick, look and
// syncTimer take three: what an entry, and each turn of a halt's wait,
// needs. A PV EOI the guest did is completed first (its vector would hide
// a lower one), as look does.
func (v *VCPU) enter() (vlapic.Pending, vlapic.Entry) {
	v.pveoi.Sync()
	e := v.lapic.Enter()
	v.latch(e.Events)
	p := e.Pending
	p.Events = v.events
	return p, e
}

// errStop ends the loop quietly (the VM is ending).
var errStop = errors.New("stop")

func (v *VCPU) stopped() bool {
	select {
	case <-v.done:
		return true
	default:
		return false
	}
}

// syncCR8 takes a TPR the guest changed with MOV CR8 into the LAPIC.
func (v *VCPU) syncCR8(run *kvm.Run) {
	if run.CR8 != v.cr8 {
		v.lapic.SetCR8(run.CR8)
		v.cr8 = run.CR8
	}
}

// prepareEntry acts on latched INIT/SIPI/NMI and injects the highest
// deliverable vector, or asks KVM for an interrupt window when the guest
// cannot take it now. It decides from one vlapic.Pending value (look, which
// folds the LAPIC's AVIC backing page, so every vector posted before it
// runs is seen here) and one acknowledgement (vlapic.Ack). It returns
// errStop if the VM ended while the vCPU was waiting for SIPI.
func (v *VCPU) prepareEntry() error {
	run := v.kvm.RunData()
	p, e := v.enter()
	v.syncTimerTo(e.TimerAt, e.TimerArmed)
	v.cr8 = e.CR8
	if v.events.INIT {
		v.events.INIT = false
		if err := v.completeExit(); err != nil {
			return err
		}
		v.pveoi.Reset()
		v.lapic.InitReset()
		if err := disableKVMPV(v.kvm); err != nil {
			return err
		}
		if err := v.waitSIPI(); err != nil {
			return err
		}
		v.state.Store(uint32(StateGuest))
		p = v.look()
		v.syncTimer()
		v.cr8 = v.lapic.CR8()
	}
	// Each NMI is one KVM_NMI: KVM queues them and keeps what the
	// architecture can deliver (process_nmi). An NMI KVM refuses is an
	// error, never dropped.
	for ; v.events.NMIs > 0; v.events.NMIs-- {
		if err := v.kvm.NMI(); err != nil {
			return fmt.Errorf("injecting an NMI: %w", err)
		}
		v.acct.NMIs.Add(1)
		v.log.add(evNMI, 0, run.Sync.Regs.RIP)
	}
	v.events.ExtINT = false // no 8259: nothing to acknowledge
	allowed := interruptAllowed(run, v.exceptionQueued)
	injected := -1
	if p.Fixed && allowed {
		v.pveoi.Complete() // a nested vector: the first one needs a real EOI
		if ack := v.lapic.AcknowledgePV(); ack.OK {
			// The vector is in service now: failing to inject it
			// would lose it, so that is fatal, never silent.
			if err := v.kvm.Interrupt(ack.Vector); err != nil {
				return fmt.Errorf("injecting vector %#x: %w", ack.Vector, err)
			}
			injected = int(ack.Vector)
			v.acct.Inject(ack.Vector)
			v.log.add(evInject, uint32(ack.Vector), run.Sync.Regs.RIP)
			if ack.PVEOI {
				v.pveoi.Offer()
			}
		}
	}
	// A vector that arrives from here on notifies this vCPU, whose kick
	// makes the coming KVM_RUN exit at once (immediate_exit): only a
	// vector the CPU cannot take now needs the window.
	v.windowFor = -1
	if p.NeedsWindow(allowed) {
		v.windowFor = int(p.Vector)
	}
	v.kvm.SetRequestInterruptWindow(v.windowFor >= 0)
	if run.DirtyRegs&kvm.SyncRegsSregs != 0 {
		// KVM_RUN will load the sregs a handler edited, and loading them
		// queues the lowest vector of interrupt_bitmap for injection
		// (__set_sregs in arch/x86/kvm/x86.c): the bitmap must be what is
		// queued now, not what was at the exit.
		run.Sync.Sregs.InterruptBitmap = queuedBitmap(run.Sync.Sregs.InterruptBitmap, injected)
	}
	run.CR8 = v.cr8
	return nil
}

func (v *VCPU) takeEvents() { v.latch(v.lapic.TakeEvents()) }

// latch adds events taken from the LAPIC to those not yet acted on.
func (v *VCPU) latch(e vlapic.Events) {
	v.events.NMIs = min(v.events.NMIs+e.NMIs, vlapic.MaxLatchedNMIs)
	v.events.INIT = v.events.INIT || e.INIT
	v.events.ExtINT = v.events.ExtINT || e.ExtINT
	// A Startup IPI counts only for a CPU waiting for one (after INIT, or
	// with an INIT still to act on); any other CPU discards it, as
	// hardware does (SDM vol. 3, 10.4.7.3): latched, it would start the
	// CPU at a stale vector after its next INIT.
	if e.SIPI && (e.INIT || v.events.INIT || State(v.state.Load()) == StateWaitSIPI) {
		v.events.SIPI, v.events.SIPIVector = true, e.SIPIVector
	}
}

// halt sleeps after HLT until an interrupt the guest can take (IF set),
// an NMI or an INIT arrives. It returns false when the VM ends. The wake
// check (look: TakePending) folds the AVIC backing page, and senders post
// before they notify, so a posted IPI always ends the sleep. Before the
// first sleep the thread polls for a wake-up for the window package
// haltpoll gives it, and tells the window how long the halt lasted.
func (v *VCPU) halt(ifFlag bool) bool {
	v.state.Store(uint32(StateHalted))
	defer v.state.Store(uint32(StateVMM))
	start := v.clock.Now()
	p, woke := v.waitWake(ifFlag, start)
	v.poll.Done(time.Duration(v.clock.Now()-start), woke)
	if woke {
		v.acct.Wakeups.Add(1)
		v.charge(p.Fixed && ifFlag, p.Vector, accounting.ChargeHLT) // the HLT exit was the IPI's
	}
	return woke
}

// charge counts an exit of this vCPU, made for vector vec (if fixed),
// to the interrupt that requested it: the vector's latency tag, while it
// waits unacknowledged, is the IPI's accounting kind or DeviceMSI for a
// device's MSI (vmm/latency.go). A vector nothing stamped (a timer's, the
// IOAPIC's) charges nothing.
func (v *VCPU) charge(fixed bool, vec uint8, why accounting.ChargeReason) {
	if !fixed {
		return
	}
	if tag, ok := v.lapic.PendingTag(vec); ok {
		v.acct.Charge(tag, why)
	}
}

// waitWake is halt's wait: look, poll once, then sleep until woken and
// look again. It returns what woke it, or false when the VM ends.
func (v *VCPU) waitWake(ifFlag bool, start int64) (vlapic.Pending, bool) {
	polled, slept := false, false
	for {
		p, e := v.enter()
		if p.Wakes(ifFlag) {
			if polled && !slept {
				v.acct.HaltPollHits.Add(1)
			}
			return p, true
		}
		v.syncTimerTo(e.TimerAt, e.TimerArmed)
		if !polled {
			polled = true
			if v.pollWake(start) {
				continue
			}
		}
		slept = true
		select {
		case <-v.wake:
		case <-v.done:
			return vlapic.Pending{}, false
		}
	}
}

// pollWake spins until a wake-up signal comes or the poll window, counted
// from start, ends; it says whether one came (and takes it). Every wake-up
// arrives as that signal (Notify, after the sender set IRR or posted to
// the AVIC page; the LAPIC timer's host timer, which syncTimer armed, also
// notifies), so the spin reads one channel length and the clock, and takes
// no lock a sender needs. Polls and their time are counted.
func (v *VCPU) pollWake(start int64) bool {
	win := v.poll.Poll()
	if win <= 0 {
		return false
	}
	t0 := v.clock.Now()
	v.acct.HaltPolls.Add(1) // after t0: whoever sees the poll counted sees it timed from before
	stop, now := start+int64(win), t0
	for len(v.wake) == 0 && now < stop {
		now = v.clock.Now()
	}
	// The poll's end is now, not the loop's last clock read: a thread
	// descheduled between that read and the signal polled until now.
	now = v.clock.Now()
	v.acct.HaltPollNanos.Add(uint64(max(now-t0, 0)))
	select {
	case <-v.wake:
		return true
	default:
		return false
	}
}

// afterRun is what every return from KVM_RUN leaves behind: the exception
// queued and the sregs read belong to the entry that ended, and the kick
// is cleared, in this order, and immediate_exit always: a Notify that won
// its CAS before the Store may set immediate_exit after we looked, which
// must cost at most one spurious exit, never leave immediate_exit set
// with no kick pending (every later KVM_RUN would return at once and the
// guest would never run again).
func (v *VCPU) afterRun() {
	v.exceptionQueued, v.sregsFresh = false, false
	v.kickPending.Store(false)
	v.kvm.SetImmediateExit(false)
}

// completeExit ends, before INIT, the exit the vCPU last took. KVM
// finishes a user-space exit only at the start of the next KVM_RUN
// (kvm_arch_vcpu_ioctl_run calls complete_userspace_io first: an IN's or
// MMIO read's data into its register and RIP past the instruction,
// complete_emulated_msr_access's #GP for an MSR govmm refused, RIP past a
// WRMSR it took). Left for the first KVM_RUN after SIPI, that completion
// would act on the real-mode start-up state: skip bytes of the
// trampoline, or queue a #GP there, which KVM, emulating the real-mode
// code on hosts without unrestricted guest, reports as an emulation
// failure (the in-guest fuzzer found this: an AP that took an MSR exit
// just as another CPU's INIT reached it died on its trampoline's far
// jump). So: KVM_RUN with immediate_exit, which completes the exit and
// returns EINTR without entering the guest, then drop any event that
// completion queued, as INIT does (kvm_vcpu_reset(init_event) clears
// the exception and interrupt queues and pending NMIs).
//
// Completing an MMIO read can take KVM's emulator to the instruction's
// next access (a string MOVS, an access split at a page boundary): that
// KVM_RUN returns that new exit instead of EINTR. It is served like any
// other, and KVM_RUN repeated, until the instruction is done.
func (v *VCPU) completeExit() error {
	const maxParts = 64 // a REP MOVS of an MMIO range completes in pieces
	run := v.kvm.RunData()
	for i := 0; ; i++ {
		v.kvm.SetImmediateExit(true)
		err := v.kvm.Run()
		v.afterRun() // a kick that came meanwhile is seen by the look that follows INIT
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				v.log.add(evINIT, uint32(i), run.Sync.Regs.RIP)
				break
			}
			return fmt.Errorf("KVM_RUN to complete the last exit before INIT: %w", err)
		}
		if i == maxParts {
			return fmt.Errorf("the instruction INIT interrupted was not complete after %d more exits", maxParts)
		}
		if err := v.handleExit(run); err != nil {
			return err
		}
	}
	ev, err := v.kvm.Events()
	if err != nil {
		return err
	}
	ev.Exception.Injected, ev.Exception.Pending, ev.Exception.HasErrorCode = 0, 0, 0
	ev.ExceptionHasPayload, ev.ExceptionPayload = 0, 0
	ev.Interrupt.Injected, ev.Interrupt.Shadow = 0, 0
	// NMIs unblocked too: KVM's own INIT clears the interruptibility state
	// (vmx_vcpu_reset writes GUEST_INTERRUPTIBILITY_INFO = 0: STI and MOV
	// SS shadows and NMI blocking), so a CPU INITed inside an NMI handler
	// takes NMIs again without waiting for an IRET it will never do.
	ev.NMI.Injected, ev.NMI.Pending, ev.NMI.Masked = 0, 0, 0
	ev.Flags = kvm.VCPUEventValidNMIPending | kvm.VCPUEventValidShadow
	return v.kvm.SetEvents(ev)
}

// waitSIPI parks the vCPU until a Startup IPI, then puts it in real mode at
// vector << 8. It returns errStop when the VM ends, and KVM's refusal of
// the start-up state as an error of its own.
func (v *VCPU) waitSIPI() error {
	v.state.Store(uint32(StateWaitSIPI))
	defer v.state.Store(uint32(StateVMM))
	// A SIPI latched together with the INIT that sent us here came after
	// it (INIT then SIPI is the only order software uses): keep it.
	v.events.NMIs = 0
	for {
		v.takeEvents()
		if v.events.INIT {
			v.events.INIT = false
			v.lapic.InitReset()
		}
		if v.events.SIPI {
			vec := v.events.SIPIVector
			v.events = vlapic.Events{}
			v.exceptionQueued = false
			if err := startAt(v.kvm, vec, v.sig); err != nil {
				return fmt.Errorf("starting at SIPI vector %#x: %w", vec, err)
			}
			v.log.add(evSIPI, uint32(vec), 0)
			v.acct.Wakeups.Add(1)
			return nil
		}
		select {
		case <-v.wake:
		case <-v.done:
			return errStop
		}
	}
}

// syncTimer keeps the host timer aimed at the LAPIC timer's next deadline.
func (v *VCPU) syncTimer() { v.syncTimerTo(v.lapic.TimerDeadline()) }

// syncTimerTo aims the host timer at at (armed false: stops it), the LAPIC
// timer's deadline as read.
func (v *VCPU) syncTimerTo(at int64, armed bool) {
	if armed == v.timerArmed && at == v.timerAt {
		return
	}
	v.timerAt, v.timerArmed = at, armed
	if !armed {
		v.timer.Stop()
		return
	}
	v.timer.Reset(time.Duration(at - v.clock.Now()))
}

// timerFired runs on a runtime timer goroutine: raise the vector, then kick.
func (v *VCPU) timerFired() {
	v.lapic.Tick()
	v.Notify()
}

// interruptAllowed says whether an interrupt injected now will be taken at
// the next entry. It is what KVM reported at the exit
// (ready_for_interrupt_injection, if_flag) unless this exit's handler
// changed it: RFLAGS edited (a completed SYSCALL masks IF) is read from the
// registers KVM_RUN will load; and an exception queued for the entry comes
// first, while an interrupt queued with KVM_INTERRUPT for that same entry
// is not injected and is cleared at the next exit (an acknowledged vector
// lost for good). Then govmm asks for an interrupt window instead.
func interruptAllowed(run *kvm.Run, exceptionQueued bool) bool {
	const rflagsIF = 1 << 9
	switch {
	case exceptionQueued, run.ReadyForInterruptInjection == 0:
		return false
	case run.DirtyRegs&kvm.SyncRegsGPR != 0:
		return run.Sync.Regs.RFLAGS&rflagsIF != 0
	}
	return run.IFFlag != 0
}

// queuedBitmap is the interrupt_bitmap that says what is queued for the
// next entry: the vector govmm injected now (it can only inject when
// nothing else is queued), else the exit's bitmap (whatever a handler left
// queued or, having withdrawn it, cleared).
func queuedBitmap(atExit [4]uint64, injected int) [4]uint64 {
	if injected < 0 {
		return atExit
	}
	var b [4]uint64
	b[injected/64] = 1 << (injected % 64)
	return b
}

// sregs returns this exit's segment and control registers, read from KVM
// (KVM_GET_SREGS) into run.Sync.Sregs on first use. A handler that edits
// them marks kvm.SyncRegsSregs dirty, and the next KVM_RUN loads them.
func (v *VCPU) sregs() (*kvm.Sregs, error) {
	run := v.kvm.RunData()
	if !v.sregsFresh {
		s, err := v.kvm.Sregs()
		if err != nil {
			return nil, err
		}
		run.Sync.Sregs, v.sregsFresh = s, true
	}
	return &run.Sync.Sregs, nil
}
