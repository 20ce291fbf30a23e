// This file holds a vCPU's construction: Config, what wires it to the VM;
// VCPU, with who may touch each field; New.

package vcpu

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/complete"
	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/haltpoll"
	"github.com/govmm/govmm/internal/tscclock"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/memory"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/xstate"
)

// Config wires a vCPU to the rest of the VM.
type Config struct {
	// KVM is the virtual CPU the loop drives (a *kvm.VCPU).
	KVM Hardware
	// LAPIC is the vCPU's own; its observer (vlapic.LAPIC.Observer) is
	// told of injections and of the exits made for an interrupt. Nil with
	// InKernel.
	LAPIC *vlapic.LAPIC
	// InKernel: the vCPU's LAPIC is KVM's (--lapic=kvm, split irqchip):
	// KVM injects, halts and starts APs, and the loop serves only the
	// exits that reach user space (inkernel.go). KVM must then implement
	// InKernel.
	InKernel bool
	// Resume, for a vCPU restored from a snapshot, is its saved state: the
	// loop loads it into KVM on its own thread and goes on where it was
	// (running, halted, waiting for SIPI). Boot is then nil.
	Resume *Saved
	// Restored, with Resume, is called on the vCPU's thread once its
	// saved state is loaded (before it waits on, if it was halted), and
	// returns when the vCPU may go on: the VM holds every vCPU until all
	// have their state, then starts its devices (vmm.Restore).
	Restored func()
	// SMM: the VM's memory is mapped in KVM's SMM address space too, so
	// an SMI the LAPIC accepts is injected (KVM_SMI). false: the host's
	// KVM has no SMM, and such an SMI is counted as dropped.
	SMM bool
	// IOAPICEOI hears the vector of each KVM_EXIT_IOAPIC_EOI (InKernel):
	// the user-space IOAPIC's EOI of a level-triggered pin.
	IOAPICEOI func(vector uint8)
	// Counters counts the vCPU's exits by cause, its kicks, wake-ups,
	// halt polls and NMIs (accounting.VCPU in govmm); nil counts nothing.
	Counters Counters
	// Bus serves the vCPU's PIO, MMIO and MSR exits (read-only once the
	// vCPU runs).
	Bus   *exitbus.Bus
	Clock vlapic.Clock
	// HaltClock times halts and halt polling (nil: Clock). govmm gives
	// it the TSC-based clock of the accounting's stamps: a halt reads it
	// at least twice, and where Go's clock read is a system call (the
	// nested hosts) those reads were a share of every halted IPI's round
	// trip.
	HaltClock vlapic.Clock
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
	// YieldEvery is how many host TSC cycles the loop may run without
	// blocking before it yields to Go's scheduler (loop_cede.go); 0 never
	// yields.
	YieldEvery uint64
	// RawRun enters the guest without Go's entersyscall
	// (kvm.VCPU.RunRaw), with Go's preemption signal let through on the
	// vCPU's thread (sigmask.go): cheaper at every exit, but a
	// stop-the-world then waits for each vCPU thread to be scheduled and
	// take that signal, and a KVM_RUN the signal ends is a host signal,
	// counted apart (HostSignal), never as an exit of the guest's (kick.go).
	// Unused with the LAPIC in KVM.
	RawRun bool
	// Pin pins the vCPU's thread to host CPU HostCPU (--cpu-affinity):
	// the thread never moves, so KVM never reloads the vCPU's state on
	// another CPU (kvm_arch_vcpu_load); unset, the kernel places it.
	Pin     bool
	HostCPU int
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
// threads; wake may be woken from any thread (waker).
type VCPU struct {
	id  int
	kvm Hardware
	// direct is a copy of kvm when that is KVM's own vCPU (isDirect; a
	// test's fake is not): the loop's calls at every exit go to it
	// without the interface (loop_direct.go). A copy, not the pointer:
	// a kvm.VCPU is its fd and kvm_run mapping, which never change, and
	// read from here they cost an exit no page of the kvm.VCPU's own.
	direct   kvm.VCPU
	isDirect bool
	// run is kvm's RunData, the kvm_run page, mapped once for the vCPU's
	// life: the loop's hot paths read it without an interface call.
	runData *kvm.Run
	lapic   *vlapic.LAPIC
	obs     vlapic.Observer // the LAPIC's (vlapic.LAPIC.Observer), told of injections and the exits made for an interrupt
	counts  Counters        // the loop's own events (Config.Counters)
	// exits is where the loop counts its exits by cause (Counters'
	// ExitTally): a direct add, no interface call, on every exit. The
	// vCPU's thread only (the Tally's readers read it themselves).
	exits *exitcause.Tally
	bus   *exitbus.Bus
	acc   exitbus.Access // the exit being served (handleIO, handleMMIO, busMSR, x2apic)
	eff   vlapic.Effect  // an x2APIC write's, filled in place (x2apic)
	pveoi PVEOI
	// pvOffered is pveoi.Pending() as of the loop's last call of pveoi
	// (pvSync and the rest, pveoi.go); the vCPU's thread only.
	pvOffered bool
	// pvOff: the last offer found the guest's PV EOI off (its MSR never
	// enabled, or disabled), so no offer is made, and package pveoi's
	// pages are not touched at each injection, until the guest writes
	// that MSR again (an exit of cause MSRPVEOIWrite: access), an INIT
	// or a restore (pvReset, pvRestore); the vCPU's thread only.
	pvOff bool
	clock vlapic.Clock
	// haltClock is Config.HaltClock, or clock; haltTSC is a copy of it,
	// read directly, when it is a *tscclock.Clock (govmm's: haltNow).
	haltClock vlapic.Clock
	haltTSC   tscclock.Clock
	mem       *memory.Memory
	hostCPU   int // Config.HostCPU when Config.Pin, else -1
	// yieldEvery and lastYield (host TSC) pace yieldIfDue.
	yieldEvery, lastYield uint64
	testTSC               func() uint64                             // a test's TSC (package testTSC); nil: RDTSC
	testTgkill            func(pid, tid int, sig unix.Signal) error // a test's tgkill; nil: tgkill(2)
	// rawRun is Config.RawRun (and a LAPIC of govmm's).
	rawRun bool
	done   <-chan struct{}
	boot   *EntryState
	sig    uint32 // Config.Signature, or 0x600

	state       atomic.Uint32
	kickPending atomic.Bool
	// ended: the VM has ended (Done closed); set by Stop from any thread
	// before its Notify, read by the loop (stopped).
	ended atomic.Bool
	// kicksSent counts Notify's kicks (written from any thread);
	// kicksTaken is the count a KVM_RUN's EINTR last took (the vCPU's
	// thread): with rawRun, an EINTR with no kick sent since the last is
	// a host signal's (endedBy).
	kicksSent  atomic.Uint64
	kicksTaken uint64
	// notified is set by every Notify, from any thread, before it looks
	// at state; the entry takes it (quietEntry).
	notified atomic.Bool
	// quiet: the last full entry found nothing for the LAPIC to act on
	// and left nothing standing (quietEntry); exitQuiet: the exit just
	// served touched none of this vCPU's own LAPIC state. Both belong to
	// the vCPU's thread.
	quiet, exitQuiet bool
	// sendExit: the access just served was an IPI's send; tprWrite: an
	// x2APIC TPR write (access).
	sendExit, tprWrite bool
	tid                atomic.Int32
	pid                int
	wake               waker
	dumpTo             atomic.Pointer[io.Writer]
	syms               func() *ksyms.Table

	// sregsFresh: run.Sync.Sregs holds this exit's segment and control
	// registers (read by sregs). Cleared by every KVM_RUN.
	sregsFresh bool
	// exceptionQueued: this exit's handler made KVM deliver an exception at
	// the next entry (injected with KVM_SET_VCPU_EVENTS, or an MSR access
	// answered with an error, which KVM turns into #GP). Cleared by a
	// KVM_RUN that exits: one that ended without (a kick) may have left it
	// pending (afterRun).
	exceptionQueued bool
	// kicked: the last KVM_RUN ended for a kick (EINTR, immediate_exit,
	// KVM_EXIT_INTR); the exit is counted, as a kick or a spurious one,
	// by the next entry's look at the LAPIC (countKick). signalled: with
	// rawRun, it ended for a host signal (Go's SIGURG) with no kick sent;
	// counted by that look too, as the kick the signal forestalled if the
	// look finds work, else as no exit at all.
	kicked, signalled bool

	// completer finishes the instructions the host's emulator gives up
	// on (package complete); the loop's one entry into it is recover.
	completer *complete.Unit

	// inKernel is Config.KVM's InKernel side when the LAPIC is KVM's (nil
	// otherwise: lapic is then set); ioapicEOI is Config.IOAPICEOI.
	inKernel  InKernel
	ioapicEOI func(vector uint8)

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

	smm bool // Config.SMM: an SMI is injected, not dropped

	// parkReq is a pending request to park (park.go): set by any thread
	// (Park), taken by the vCPU's own thread at a parking point.
	parkReq   atomic.Pointer[Parking]
	xsaveSize int // Config.XSAVESize: KVM_GET_XSAVE2's size, for SaveState
	resume    *Saved
	restored  func()
}

// New builds the vCPU; nothing runs until Run.
func New(id int, c Config) *VCPU {
	installKickHandler()
	v := &VCPU{id: id, kvm: c.KVM, lapic: c.LAPIC, counts: c.Counters, bus: c.Bus, pveoi: c.PVEOI, clock: c.Clock, mem: c.Mem,
		done: c.Done, boot: c.Boot, syms: c.Symbols, pid: os.Getpid(), poll: haltpoll.New(c.HaltPoll), smm: c.SMM, xsaveSize: c.XSAVESize, resume: c.Resume, restored: c.Restored}
	v.runData = c.KVM.RunData()
	if k, ok := c.KVM.(*kvm.VCPU); ok {
		v.direct, v.isDirect = *k, true
	}
	if c.InKernel {
		v.inKernel, v.ioapicEOI = c.KVM.(InKernel), c.IOAPICEOI
		v.lapic = nil
	} else {
		v.obs = c.LAPIC.Observer()
		v.rawRun = c.RawRun
	}
	if v.pveoi == nil {
		v.pveoi = noPVEOI{}
	}
	if v.haltClock = c.HaltClock; v.haltClock == nil {
		v.haltClock = c.Clock
	}
	if t, ok := v.haltClock.(*tscclock.Clock); ok {
		v.haltTSC, v.haltClock = *t, nil
	}
	if v.counts == nil {
		v.counts = NopCounters{}
	}
	v.exits = v.counts.ExitTally()
	v.sig, v.yieldEvery, v.hostCPU = c.Signature, c.YieldEvery, -1
	v.testTSC = testTSC
	if c.Pin {
		v.hostCPU = c.HostCPU
	}
	if v.sig == 0 {
		v.sig = 0x600
	}
	v.completer = complete.New(v.kvm, v.mem, v.sregs, c.XState, c.XSAVESize)
	v.timer = time.AfterFunc(time.Hour, v.timerFired)
	v.timer.Stop()
	if v.done != nil {
		// The VM's end kicks or wakes the vCPU, which then sees it.
		go func() {
			<-v.done
			v.Stop()
		}()
	}
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
