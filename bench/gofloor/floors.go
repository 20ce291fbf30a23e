// The exit floor and the IPI floor, as bench/floor/floorvmm.c and
// flooripi.c have them, step for step.

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/kvm"
)

// exitFloor is floorvmm.c's exit_floor: one vCPU in floorloop.bin, each
// exit answered (reads all ones, MSR writes accepted) and counted if it
// is of kind, until the guest's HLT reports its TSC cycles.
func exitFloor(m *vm, t thread, name string, kind int, count uint32) error {
	var (
		wg  sync.WaitGroup
		err error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err = exitLoop(m, t, name, kind, count)
	}()
	wg.Wait()
	return err
}

func exitLoop(m *vm, t thread, name string, kind int, count uint32) error {
	if err := t.setup(0); err != nil {
		return err
	}
	c, err := m.vcpu(0, kvm.Regs{RIP: loadAt, RSP: stackTop, RFLAGS: 2, RAX: uint64(kind), RCX: uint64(count)})
	if err != nil {
		return err
	}
	run := c.RunData()
	y := newYielder(t.yield)
	var exits uint64
	for {
		y.maybe()
		if err := t.kvmRun(c); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("KVM_RUN: %w", err)
		}
		switch run.ExitReason {
		case kvm.ExitIO:
			io, data := c.IO()
			if io.Direction == 0 {
				for i := range data {
					data[i] = 0xff
				}
			}
			exits += b2u(kind == 0)
		case kvm.ExitMMIO:
			mm := c.MMIO()
			if mm.IsWrite == 0 {
				for i := range mm.Data[:min(mm.Len, 8)] {
					mm.Data[i] = 0xff
				}
			}
			exits += b2u(kind == 1)
		case kvm.ExitX86WRMSR:
			c.MSR().Error = 0
			exits += b2u(kind == 2)
		case kvm.ExitX86RDMSR:
			c.MSR().Data, c.MSR().Error = 0, 0
		case kvm.ExitHLT:
			r, err := c.Regs()
			if err != nil {
				return err
			}
			fmt.Fprintf(t.out, "floor kind=%s count=%d cycles=%d exits=%d\n", name, count, r.RDX&0xffffffff<<32|r.RAX&0xffffffff, exits)
			return nil
		default:
			return fmt.Errorf("unexpected exit reason %d", run.ExitReason)
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// The IPI floor's guest interface (rttloop.S).
const (
	nCPUs      = 2
	apEntry    = loadAt + 16
	section    = 0x660
	msrICR     = 0x830
	msrEOI     = 0x80B
	xapic      = 0xFEE00000
	kickSignal = unix.SIGUSR1
)

// Where a vCPU's thread is: its state word, which a halted thread sleeps
// on (futex).
const (
	inVMM uint32 = iota
	inGuest
	halted
)

// ipiVCPU is one vCPU of the IPI floor. state and irr are written by
// other threads (senders: atomics); isr and icr2 by its own only.
type ipiVCPU struct {
	id          int
	c           *kvm.VCPU
	tid         atomic.Int32
	state       uint32 // atomic; the futex word
	irr         [8]atomic.Uint32
	kickPending atomic.Bool
	isr         [8]uint32
	icr2        uint32
	exits       atomic.Uint64
	kicks       atomic.Uint64
	wakeups     atomic.Uint64
	windows     atomic.Uint64
}

type ipiVM struct {
	out       io.Writer
	mem       []byte // guest RAM: the round trips' cycles at floorSamples
	cpus      [nCPUs]*ipiVCPU
	name      string
	rounds    uint32
	gap       uint32
	done      atomic.Bool
	pid       int
	atStart   [nCPUs + 3]uint64 // exits per vCPU, then the receiver's kicks, wake-ups, windows
	atStartMu sync.Mutex
}

func highestAtomic(w *[8]atomic.Uint32) int {
	for i := 7; i >= 0; i-- {
		if x := w[i].Load(); x != 0 {
			return i*32 + 31 - bits.LeadingZeros32(x)
		}
	}
	return -1
}

func highest(w *[8]uint32) int {
	for i := 7; i >= 0; i-- {
		if w[i] != 0 {
			return i*32 + 31 - bits.LeadingZeros32(w[i])
		}
	}
	return -1
}

func futex(w *uint32, op, val uintptr, raw bool) {
	if raw {
		unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), op, val, 0, 0, 0)
		return
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), op, val, 0, 0, 0)
}

const (
	futexWaitPrivate = 0 | 128
	futexWakePrivate = 1 | 128
)

// notify is the sender's half: the target has a new IRR bit.
func (m *ipiVM) notify(t *ipiVCPU) {
	switch s := atomic.LoadUint32(&t.state); s {
	case halted:
		if atomic.CompareAndSwapUint32(&t.state, halted, inVMM) {
			futex(&t.state, futexWakePrivate, 1, true)
		}
	case inGuest:
		if !t.kickPending.Swap(true) {
			t.c.SetImmediateExit(true)
			if _, _, e := unix.RawSyscall(unix.SYS_TGKILL, uintptr(m.pid), uintptr(t.tid.Load()), uintptr(kickSignal)); e != 0 {
				fmt.Fprintf(os.Stderr, "gofloor: tgkill: %v\n", e)
				os.Exit(2)
			}
		}
	}
}

func (m *ipiVM) deliver(dest, icr uint32) error {
	vec := icr & 0xff
	if dest >= nCPUs || vec < 16 || icr&0x700 != 0 {
		return fmt.Errorf("ICR %#x to %d: the floor sends fixed IPIs to APIC IDs 0-%d", icr, dest, nCPUs-1)
	}
	t := m.cpus[dest]
	t.irr[vec/32].Or(1 << (vec % 32))
	m.notify(t)
	return nil
}

func (v *ipiVCPU) eoi() {
	if vec := highest(&v.isr); vec >= 0 {
		v.isr[vec/32] &^= 1 << (vec % 32)
	}
}

// inject moves the highest IRR vector to ISR with KVM_INTERRUPT when the
// guest can take it (and nothing of its class or above is in service),
// else asks for the window if one is pending.
func (v *ipiVCPU) inject() error {
	run := v.c.RunData()
	vec := highestAtomic(&v.irr)
	run.RequestInterruptWindow = 0
	if vec < 0 || highest(&v.isr)>>4 >= vec>>4 {
		return nil
	}
	if run.ReadyForInterruptInjection == 0 {
		run.RequestInterruptWindow = 1
		return nil
	}
	v.irr[vec/32].And(^uint32(1 << (vec % 32)))
	v.isr[vec/32] |= 1 << (vec % 32)
	return v.c.Interrupt(uint8(vec))
}

// halt waits for an IRR bit (the guest halts with IF set) or the end.
func (m *ipiVM) halt(v *ipiVCPU) {
	slept := false
	atomic.StoreUint32(&v.state, halted)
	for highestAtomic(&v.irr) < 0 && !m.done.Load() {
		futex(&v.state, futexWaitPrivate, uintptr(halted), false)
		slept = true
	}
	atomic.StoreUint32(&v.state, inVMM)
	if slept {
		v.wakeups.Add(1)
	}
}

func (m *ipiVM) snap() (s [nCPUs + 3]uint64) {
	for i, c := range m.cpus {
		s[i] = c.exits.Load()
	}
	r := m.cpus[1]
	s[nCPUs], s[nCPUs+1], s[nCPUs+2] = r.kicks.Load(), r.wakeups.Load(), r.windows.Load()
	return s
}

// report is the BSP's HLT: EBX 1 halted, 2 spinning, 0 done. It says
// whether the guest is done.
func (m *ipiVM) report(v *ipiVCPU) (bool, error) {
	r, err := v.c.Regs()
	if err != nil {
		return false, err
	}
	if r.RBX&0xffffffff == 0 {
		return true, nil
	}
	now := m.snap()
	m.atStartMu.Lock()
	d := func(i int) uint64 { return now[i] - m.atStart[i] }
	recv := "spinning"
	if r.RBX == 1 {
		recv = "halted"
	}
	fmt.Fprintf(m.out, "floor-ipi kind=%s receiver=%s rounds=%d gap=%d cycles=%d min=%d max=%d "+
		"sender_exits=%d receiver_exits=%d kicks=%d wakeups=%d windows=%d median=%d\n",
		m.name, recv, m.rounds, m.gap, r.RDX&0xffffffff<<32|r.RAX&0xffffffff, uint32(r.RSI), uint32(r.RDI),
		d(0), d(1), d(nCPUs), d(nCPUs+1), d(nCPUs+2), m.median())
	m.atStartMu.Unlock()
	return false, nil
}

// The round trips' cycles, as rttloop.S stores them under a floor VMM
// (bench/floor/floor.h).
const (
	floorSamples    = 0x100000
	floorSamplesCap = 65536
)

// median is the middle of the section's round trips, the lower of the
// two for an even count.
func (m *ipiVM) median() uint32 {
	n := min(int(m.rounds), floorSamplesCap)
	s := make([]uint32, n)
	for i := range s {
		s[i] = binary.LittleEndian.Uint32(m.mem[floorSamples+4*i:])
	}
	slices.Sort(s)
	return s[(n-1)/2]
}

// handleExit handles one exit; it says whether the VM is done. Section
// markers and the BSP's reports are not counted as exits.
func (m *ipiVM) handleExit(v *ipiVCPU) (bool, error) {
	run := v.c.RunData()
	switch run.ExitReason {
	case kvm.ExitX86WRMSR:
		msr := v.c.MSR()
		msr.Error = 0
		switch msr.Index {
		case msrICR:
			if err := m.deliver(uint32(msr.Data>>32), uint32(msr.Data)); err != nil {
				return false, err
			}
		case msrEOI:
			v.eoi()
		}
	case kvm.ExitX86RDMSR:
		v.c.MSR().Data, v.c.MSR().Error = 0, 0
	case kvm.ExitMMIO:
		mm := v.c.MMIO()
		if mm.IsWrite == 0 {
			mm.Data = [8]byte{} // ICR: delivery status idle
			break
		}
		var b [4]byte
		copy(b[:], mm.Data[:min(mm.Len, 4)])
		val := binary.LittleEndian.Uint32(b[:])
		switch mm.PhysAddr {
		case xapic + 0x310:
			v.icr2 = val
		case xapic + 0x300:
			if err := m.deliver(v.icr2>>24, val); err != nil {
				return false, err
			}
		case xapic + 0x0B0:
			v.eoi()
		}
	case kvm.ExitIO:
		io, data := v.c.IO()
		if io.Port == section && io.Direction == 1 && len(data) >= 4 {
			if binary.LittleEndian.Uint32(data) != 0 {
				s := m.snap()
				m.atStartMu.Lock()
				m.atStart = s
				m.atStartMu.Unlock()
			}
			return false, nil
		}
	case kvm.ExitHLT:
		if v.id == 0 {
			return m.report(v)
		}
		m.halt(v)
	case kvm.ExitIRQWindowOpen:
		v.windows.Add(1)
	default:
		return false, fmt.Errorf("vCPU %d: unexpected exit reason %d", v.id, run.ExitReason)
	}
	v.exits.Add(1)
	return false, nil
}

func (m *ipiVM) loop(v *ipiVCPU, t thread) error {
	if err := t.setup(v.id); err != nil {
		return err
	}
	v.tid.Store(int32(unix.Gettid()))
	run := v.c.RunData()
	y := newYielder(t.yield)
	for !m.done.Load() {
		y.maybe()
		if err := v.inject(); err != nil {
			return err
		}
		atomic.StoreUint32(&v.state, inGuest)
		// The last look: a sender that set IRR before this saw inVMM and
		// did not kick; one after it sees inGuest and kicks.
		if run.RequestInterruptWindow == 0 && highestAtomic(&v.irr) >= 0 && run.ReadyForInterruptInjection != 0 && highest(&v.isr) < 0 {
			atomic.StoreUint32(&v.state, inVMM)
			continue
		}
		err := t.kvmRun(v.c)
		atomic.StoreUint32(&v.state, inVMM)
		if v.kickPending.Swap(false) {
			v.c.SetImmediateExit(false)
		}
		if err != nil {
			if !errors.Is(err, unix.EINTR) {
				return fmt.Errorf("vCPU %d: KVM_RUN: %w", v.id, err)
			}
			v.kicks.Add(1)
			v.exits.Add(1)
			continue
		}
		done, err := m.handleExit(v)
		if err != nil {
			return err
		}
		if done {
			m.done.Store(true)
			for _, o := range m.cpus {
				if o != v {
					m.notify(o)
				}
			}
		}
	}
	return nil
}

// ipiFloor is flooripi.c's floor_ipi: vCPU 0 runs rttloop.bin's sender
// (EAX the send kind, ECX rounds, EDX gap), vCPU 1 its receiver.
func ipiFloor(mv *vm, t thread, name string, kind int, rounds, gap uint32) error {
	m := &ipiVM{out: t.out, mem: mv.mem, name: name, rounds: rounds, gap: gap, pid: os.Getpid()}
	for i := range m.cpus {
		rip := uint64(loadAt)
		if i > 0 {
			rip = apEntry
		}
		c, err := mv.vcpu(i, kvm.Regs{RIP: rip, RSP: uint64(stackTop - i*0x10000), RFLAGS: 2, RAX: uint64(kind), RCX: uint64(rounds), RDX: uint64(gap)})
		if err != nil {
			return err
		}
		m.cpus[i] = &ipiVCPU{id: i, c: c}
	}
	errs := make([]error, nCPUs)
	var wg sync.WaitGroup
	for i, v := range m.cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = m.loop(v, t); errs[i] != nil {
				m.done.Store(true)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
