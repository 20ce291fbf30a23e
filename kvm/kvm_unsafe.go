package kvm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctl issues one ioctl with an integer argument (never an address: see
// ioctlPtr). It never retries: EINTR reaches the caller.
func ioctl(fd int, req, arg uintptr) (uintptr, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	return r, errnoErr(e)
}

// ioctlPtr issues one ioctl whose argument is the address of *p, which the
// kernel reads or fills. The pointer becomes a uintptr only in the argument
// list of unix.Syscall, an assembly function: by unsafe.Pointer's rule 4
// the object then stays in place until the call returns. Converted any
// earlier (as the argument of a Go function on the way, as this once was),
// a stack object goes stale whenever the goroutine's stack grows between
// the conversion and the system call: the stack is copied, the kernel
// fills the old copy, and the caller reads what was there before, e.g.
// all-zero sregs, which made a 64-bit guest's XSAVE look like 16-bit code
// and stopped the VM (TestIoctlStructsSurviveStackMoves).
func ioctlPtr[T any](fd int, req uintptr, p *T) error {
	_, err := ioctlPtrN(fd, req, p)
	return err
}

// ioctlPtrN is ioctlPtr that also returns the ioctl's result.
func ioctlPtrN[T any](fd int, req uintptr, p *T) (uintptr, error) {
	r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(p)))
	return r, errnoErr(e)
}

// retryEINTR repeats a creating ioctl that a signal interrupted. Only for
// ioctls that create nothing when they fail: KVM_CREATE_VM answered EINTR
// on the nested AMD-V host (a Go runtime signal landing while the kernel
// waits, killable, for the VM's worker thread), and the VM was simply not
// made. KVM_RUN never goes through here: its EINTR is a kick.
func retryEINTR(call func() (uintptr, error)) (uintptr, error) {
	for {
		r, err := call()
		if err != unix.EINTR {
			return r, err
		}
	}
}

func errnoErr(e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// System is an open /dev/kvm.
type System struct {
	fd       int
	mmapSize int
}

// ErrNoKVM wraps every failure to open or use /dev/kvm at start-up.
var ErrNoKVM = errors.New("kvm unavailable")

// Open opens /dev/kvm and checks the API version.
func Open(path string) (*System, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		why := err.Error()
		// sysfs speaks of the kernel's /dev/kvm: its hints fit another
		// path (--kvm) only where they are about permission.
		denied := errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
		if hint := noKVMHint(sysfs, err); hint != "" && (path == "/dev/kvm" || denied) {
			why += " (" + hint + ")"
		}
		return nil, fmt.Errorf("%w: cannot open %s: %s", ErrNoKVM, path, why)
	}
	v, err := ioctl(fd, kvmGetAPIVersion, 0)
	if err != nil || v != APIVersion {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: %s speaks KVM API %d, want %d (%v)", ErrNoKVM, path, v, APIVersion, err)
	}
	sz, err := ioctl(fd, kvmGetVCPUMmapSize, 0)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w: KVM_GET_VCPU_MMAP_SIZE: %v", ErrNoKVM, err)
	}
	return &System{fd: fd, mmapSize: int(sz)}, nil
}

// Close closes /dev/kvm.
func (s *System) Close() error { return unix.Close(s.fd) }

// CheckExtension returns KVM_CHECK_EXTENSION for cap (0: absent).
func (s *System) CheckExtension(cap int) int { return checkExtension(s.fd, cap) }

func checkExtension(fd, cap int) int {
	r, err := ioctl(fd, kvmCheckExtension, uintptr(cap))
	if err != nil {
		return 0
	}
	return int(r)
}

// SupportedCPUID returns KVM_GET_SUPPORTED_CPUID.
func (s *System) SupportedCPUID() ([]CPUIDEntry, error) {
	for n := 64; n <= 4096; n *= 2 {
		buf := make([]byte, 8+n*int(unsafe.Sizeof(CPUIDEntry{})))
		*(*uint32)(unsafe.Pointer(&buf[0])) = uint32(n)
		err := ioctlPtr(s.fd, kvmGetSupportedCPUID, &buf[0])
		if err == unix.E2BIG {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("KVM_GET_SUPPORTED_CPUID: %w", err)
		}
		got := int(*(*uint32)(unsafe.Pointer(&buf[0])))
		out := make([]CPUIDEntry, got)
		copy(out, unsafe.Slice((*CPUIDEntry)(unsafe.Pointer(&buf[8])), got))
		return out, nil
	}
	return nil, errors.New("KVM_GET_SUPPORTED_CPUID: too many entries")
}

// CreateVM creates a VM (machine type 0).
func (s *System) CreateVM() (*VM, error) {
	fd, err := retryEINTR(func() (uintptr, error) { return ioctl(s.fd, kvmCreateVM, 0) })
	if err != nil {
		return nil, fmt.Errorf("KVM_CREATE_VM: %w", err)
	}
	return &VM{fd: int(fd), sys: s}, nil
}

// VM is one KVM virtual machine.
type VM struct {
	fd  int
	sys *System
}

// FD returns the VM file descriptor.
func (vm *VM) FD() int { return vm.fd }

// Close closes the VM fd.
func (vm *VM) Close() error { return unix.Close(vm.fd) }

// CheckExtension is KVM_CHECK_EXTENSION on the VM.
func (vm *VM) CheckExtension(cap int) int { return checkExtension(vm.fd, cap) }

// SetUserMemoryRegion maps host memory into the guest.
func (vm *VM) SetUserMemoryRegion(slot uint32, gpa uint64, mem []byte) error {
	r := UserspaceMemoryRegion{Slot: slot, GuestPhysAddr: gpa, MemorySize: uint64(len(mem)),
		UserspaceAddr: uint64(uintptr(unsafe.Pointer(&mem[0])))}
	if err := ioctlPtr(vm.fd, kvmSetUserMemoryRegion, &r); err != nil {
		return fmt.Errorf("KVM_SET_USER_MEMORY_REGION slot %d: %w", slot, err)
	}
	return nil
}

// SetTSSAddr places the three-page TSS region Intel's real-mode emulation needs.
func (vm *VM) SetTSSAddr(addr uint64) error {
	if _, err := ioctl(vm.fd, kvmSetTSSAddr, uintptr(addr)); err != nil {
		return fmt.Errorf("KVM_SET_TSS_ADDR: %w", err)
	}
	return nil
}

// SetIdentityMapAddr places the one-page identity map Intel's real mode needs.
func (vm *VM) SetIdentityMapAddr(addr uint64) error {
	if err := ioctlPtr(vm.fd, kvmSetIdentityMapAddr, &addr); err != nil {
		return fmt.Errorf("KVM_SET_IDENTITY_MAP_ADDR: %w", err)
	}
	return nil
}

// EnableCap is KVM_ENABLE_CAP on the VM.
func (vm *VM) EnableCap(cap uint32, args ...uint64) error {
	c := EnableCap{Cap: cap}
	copy(c.Args[:], args)
	if err := ioctlPtr(vm.fd, kvmEnableCap, &c); err != nil {
		return fmt.Errorf("KVM_ENABLE_CAP %d: %w", cap, err)
	}
	return nil
}

// MSRRange is one range of an MSR filter: the MSRs Base..Base+len(Allow)-1,
// each allowed (true) or denied, i.e. sent to user space (false).
type MSRRange struct {
	Base  uint32
	Allow []bool
	Read  bool
	Write bool
}

// SetMSRFilter installs KVM_X86_SET_MSR_FILTER with default-allow and the given
// ranges. Denied MSRs exit to user space with reason MSRExitReasonFilter once
// KVM_CAP_X86_USER_SPACE_MSR includes it.
func (vm *VM) SetMSRFilter(ranges []MSRRange) error {
	if len(ranges) > MSRFilterMaxRanges {
		return fmt.Errorf("KVM_X86_SET_MSR_FILTER: %d ranges, at most %d", len(ranges), MSRFilterMaxRanges)
	}
	var f MSRFilter
	f.Flags = MSRFilterDefaultAllow
	bitmaps := make([][]byte, len(ranges))
	for i, r := range ranges {
		bm := make([]byte, (len(r.Allow)+7)/8)
		for j, a := range r.Allow {
			if a {
				bm[j/8] |= 1 << (j % 8)
			}
		}
		bitmaps[i] = bm
		var fl uint32
		if r.Read {
			fl |= MSRFilterRead
		}
		if r.Write {
			fl |= MSRFilterWrite
		}
		f.Ranges[i] = MSRFilterRange{Flags: fl, NMSRs: uint32(len(r.Allow)), Base: r.Base,
			Bitmap: uintptr(unsafe.Pointer(&bm[0]))}
	}
	err := ioctlPtr(vm.fd, kvmX86SetMSRFilter, &f)
	runtime.KeepAlive(bitmaps)
	if err != nil {
		return fmt.Errorf("KVM_X86_SET_MSR_FILTER: %w", err)
	}
	return nil
}

// StatsFD opens the VM's binary stats file (KVM_GET_STATS_FD).
func (vm *VM) StatsFD() (*Stats, error) { return openStats(vm.fd) }

// CreateVCPU creates vCPU id and maps its kvm_run page.
func (vm *VM) CreateVCPU(id int) (*VCPU, error) {
	fd, err := retryEINTR(func() (uintptr, error) { return ioctl(vm.fd, kvmCreateVCPU, uintptr(id)) })
	if err != nil {
		return nil, fmt.Errorf("KVM_CREATE_VCPU %d: %w", id, err)
	}
	mem, err := unix.Mmap(int(fd), 0, vm.sys.mmapSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(int(fd))
		return nil, fmt.Errorf("mmap kvm_run of vCPU %d: %w", id, err)
	}
	return &VCPU{fd: int(fd), id: id, mem: mem, run: (*Run)(unsafe.Pointer(&mem[0]))}, nil
}

// VCPU is one virtual CPU. Run and the register calls must come from the
// thread that owns it; Kick (immediate_exit) may come from any thread.
type VCPU struct {
	fd  int
	id  int
	mem []byte
	run *Run
}

// ID returns the vCPU index.
func (c *VCPU) ID() int { return c.id }

// FD returns the vCPU fd.
func (c *VCPU) FD() int { return c.fd }

// Close unmaps kvm_run and closes the fd.
func (c *VCPU) Close() error {
	unix.Munmap(c.mem)
	return unix.Close(c.fd)
}

// RunData is the shared kvm_run page.
func (c *VCPU) RunData() *Run { return c.run }

// Run enters the guest once (KVM_RUN). EINTR is returned as is. Go's
// scheduler is told the thread is in a system call (entersyscall), so a
// KVM_RUN that sleeps in the kernel (a halt in KVM's own LAPIC) leaves its
// P to others, and a stop-the-world proceeds without waiting for it.
func (c *VCPU) Run() error {
	_, err := ioctl(c.fd, kvmRun, 0)
	return err
}

// RunRaw is Run without telling Go's scheduler (RawSyscall): the goroutine
// keeps its P and counts as running, which saves entersyscall and
// exitsyscall at every exit (1,300 of the 1,500 Bochs cycles a Go exit
// costs over C's, docs/exit-cost.md). It is only for a loop whose KVM_RUN
// never sleeps in the kernel (every HLT exits to user space: no in-kernel
// LAPIC) and whose thread lets Go's preemption signal (SIGURG) through:
// a stop-the-world then ends KVM_RUN with EINTR and the goroutine stops at
// its next function call. With SIGURG blocked, the world would wait for
// the guest's next exit, which a guest looping with interrupts off never
// makes.
func (c *VCPU) RunRaw() error {
	return errnoErr(unix.Errno(rawIoctl(uintptr(c.fd), kvmRun, nil)))
}

// signalMaskHead is struct kvm_signal_mask with its flexible sigset right
// after len (offset 4, unaligned): the kernel's sigset_t on x86-64 is 64
// bits, bit N-1 for signal N, little-endian.
type signalMaskHead struct {
	Len    uint32
	Sigset [8]byte
}

// SetSignalMask sets the signals blocked while this vCPU is inside KVM_RUN
// (KVM_SET_SIGNAL_MASK); outside it the thread's own mask applies. A signal
// blocked here stays pending and is taken when KVM_RUN returns, so it
// neither interrupts the guest nor is lost. SIGKILL and SIGSTOP are never
// blocked (the kernel drops them from the set).
func (c *VCPU) SetSignalMask(blocked uint64) error {
	m := signalMaskHead{Len: 8}
	binary.LittleEndian.PutUint64(m.Sigset[:], blocked)
	return ioctlPtr(c.fd, kvmSetSignalMask, &m)
}

// IO returns the io exit and its data bytes (inside kvm_run).
func (c *VCPU) IO() (*IOExit, []byte) {
	e := (*IOExit)(unsafe.Pointer(&c.run.Exit[0]))
	n := int(e.Size) * int(e.Count)
	off := int(e.DataOffset)
	if off < 0 || off+n > len(c.mem) {
		return e, nil
	}
	return e, c.mem[off : off+n]
}

// MMIO returns the mmio exit.
func (c *VCPU) MMIO() *MMIOExit { return (*MMIOExit)(unsafe.Pointer(&c.run.Exit[0])) }

// MSR returns the rdmsr/wrmsr exit.
func (c *VCPU) MSR() *MSRExit { return (*MSRExit)(unsafe.Pointer(&c.run.Exit[0])) }

// What an exit and the entry after it use (SetImmediateExit,
// SetRequestInterruptWindow, Interrupt) follows RunRaw and the exit
// accessors: one file's neighbours share pages of code (vcpu/loop.go).

// The first 32-bit word of kvm_run holds request_interrupt_window (byte 0)
// and immediate_exit (byte 1). Another thread sets immediate_exit to kick a
// vCPU, so both bytes are only ever changed with atomic read-modify-writes of
// that word.
func (c *VCPU) runWord() *uint32 { return (*uint32)(unsafe.Pointer(c.run)) }

// SetImmediateExit sets or clears kvm_run.immediate_exit; safe from any thread.
func (c *VCPU) SetImmediateExit(on bool) {
	if on {
		atomic.OrUint32(c.runWord(), 1<<8)
	} else {
		atomic.AndUint32(c.runWord(), ^uint32(1<<8))
	}
}

// SetRequestInterruptWindow sets or clears kvm_run.request_interrupt_window.
func (c *VCPU) SetRequestInterruptWindow(on bool) {
	if on {
		atomic.OrUint32(c.runWord(), 1)
	} else {
		atomic.AndUint32(c.runWord(), ^uint32(1))
	}
}

// Interrupt queues an external interrupt vector (KVM_INTERRUPT); only valid
// when kvm_run says ready_for_interrupt_injection.
func (c *VCPU) Interrupt(vector uint8) error {
	i := Interrupt{IRQ: uint32(vector)}
	// KVM_INTERRUPT only queues the vector (kvm_vcpu_ioctl_interrupt): it
	// never sleeps, so it needs no entersyscall, which an IPI's receiver
	// would pay at every injection (docs/exit-cost.md).
	return wrap("KVM_INTERRUPT", errnoErr(unix.Errno(rawIoctl(uintptr(c.fd), kvmInterrupt, unsafe.Pointer(&i)))))
}

// Internal returns the internal-error exit.
func (c *VCPU) Internal() *InternalExit { return (*InternalExit)(unsafe.Pointer(&c.run.Exit[0])) }

// EmulationFailure returns the emulation-failure overlay of the internal exit.
func (c *VCPU) EmulationFailure() *EmulationFailure {
	return (*EmulationFailure)(unsafe.Pointer(&c.run.Exit[0]))
}

// SystemEvent returns the system-event exit.
func (c *VCPU) SystemEvent() *SystemEventExit {
	return (*SystemEventExit)(unsafe.Pointer(&c.run.Exit[0]))
}

// FailEntry returns the fail-entry exit.
func (c *VCPU) FailEntry() *FailEntryExit { return (*FailEntryExit)(unsafe.Pointer(&c.run.Exit[0])) }

// Regs is KVM_GET_REGS.
func (c *VCPU) Regs() (Regs, error) {
	var r Regs
	return r, wrap("KVM_GET_REGS", ioctlPtr(c.fd, kvmGetRegs, &r))
}

// SetRegs is KVM_SET_REGS.
func (c *VCPU) SetRegs(r Regs) error { return wrap("KVM_SET_REGS", ioctlPtr(c.fd, kvmSetRegs, &r)) }

// Sregs is KVM_GET_SREGS.
func (c *VCPU) Sregs() (Sregs, error) {
	var s Sregs
	return s, wrap("KVM_GET_SREGS", ioctlPtr(c.fd, kvmGetSregs, &s))
}

// SetSregs is KVM_SET_SREGS.
func (c *VCPU) SetSregs(s Sregs) error {
	return wrap("KVM_SET_SREGS", ioctlPtr(c.fd, kvmSetSregs, &s))
}

// Events is KVM_GET_VCPU_EVENTS.
func (c *VCPU) Events() (VCPUEvents, error) {
	var e VCPUEvents
	return e, wrap("KVM_GET_VCPU_EVENTS", ioctlPtr(c.fd, kvmGetVCPUEvents, &e))
}

// SetEvents is KVM_SET_VCPU_EVENTS.
func (c *VCPU) SetEvents(e VCPUEvents) error {
	return wrap("KVM_SET_VCPU_EVENTS", ioctlPtr(c.fd, kvmSetVCPUEvents, &e))
}

// SetCPUID is KVM_SET_CPUID2.
func (c *VCPU) SetCPUID(entries []CPUIDEntry) error {
	sz := int(unsafe.Sizeof(CPUIDEntry{}))
	buf := make([]byte, 8+len(entries)*sz)
	*(*uint32)(unsafe.Pointer(&buf[0])) = uint32(len(entries))
	copy(unsafe.Slice((*CPUIDEntry)(unsafe.Pointer(&buf[8])), len(entries)), entries)
	err := ioctlPtr(c.fd, kvmSetCPUID2, &buf[0])
	return wrap("KVM_SET_CPUID2", err)
}

// NMI queues a non-maskable interrupt (KVM_NMI).
func (c *VCPU) NMI() error {
	_, err := ioctl(c.fd, kvmNMI, 0)
	return wrap("KVM_NMI", err)
}

// SMI queues a system-management interrupt (KVM_SMI): KVM enters SMM at
// the next instruction boundary where SMIs are not blocked.
func (c *VCPU) SMI() error {
	_, err := ioctl(c.fd, kvmSMI, 0)
	return wrap("KVM_SMI", err)
}

// MPState is KVM_GET_MP_STATE.
func (c *VCPU) MPState() (uint32, error) {
	var s MPState
	err := ioctlPtr(c.fd, kvmGetMPState, &s)
	return s.State, wrap("KVM_GET_MP_STATE", err)
}

// SetMPState is KVM_SET_MP_STATE.
func (c *VCPU) SetMPState(state uint32) error {
	s := MPState{State: state}
	return wrap("KVM_SET_MP_STATE", ioctlPtr(c.fd, kvmSetMPState, &s))
}

// DebugRegs is KVM_GET_DEBUGREGS.
func (c *VCPU) DebugRegs() (DebugRegs, error) {
	var d DebugRegs
	return d, wrap("KVM_GET_DEBUGREGS", ioctlPtr(c.fd, kvmGetDebugRegs, &d))
}

// Clock is KVM_GET_CLOCK: the VM's kvmclock now.
func (vm *VM) Clock() (ClockData, error) {
	var d ClockData
	return d, wrap("KVM_GET_CLOCK", ioctlPtr(vm.fd, kvmGetClock, &d))
}

// SetClock is KVM_SET_CLOCK.
func (vm *VM) SetClock(d ClockData) error {
	return wrap("KVM_SET_CLOCK", ioctlPtr(vm.fd, kvmSetClock, &d))
}

// TSCKHz is KVM_GET_TSC_KHZ.
func (c *VCPU) TSCKHz() (uint32, error) {
	r, err := ioctl(c.fd, kvmGetTSCKHz, 0)
	return uint32(r), wrap("KVM_GET_TSC_KHZ", err)
}

// StatsFD opens the vCPU's binary stats file.
func (c *VCPU) StatsFD() (*Stats, error) { return openStats(c.fd) }

// wrap names the ioctl an error came from; nil stays nil. Small enough
// to be inlined, its error path apart: an ioctl that succeeds (an
// injection's KVM_INTERRUPT, at every IPI a receiver takes) then runs no
// call, and touches no page of code of its own (scripts/rtt-pages.sh).
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return wrapped(what, err)
}

// wrapped is wrap's error path.
func wrapped(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }

// readStruct decodes a fixed-size struct from b at off.
func readStruct[T any](b []byte, off int) (T, bool) {
	var v T
	n := int(unsafe.Sizeof(v))
	if off < 0 || off+n > len(b) {
		return v, false
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), n), b[off:off+n])
	return v, true
}

// msrsHead is struct kvm_msrs with room for one struct kvm_msr_entry.
type msrsOne struct {
	NMSRs uint32
	_     uint32
	Index uint32
	_     uint32
	Data  uint64
}

// GetMSR reads one MSR with KVM_GET_MSRS (KVM's in-kernel view of it).
func (c *VCPU) GetMSR(index uint32) (uint64, error) {
	m := msrsOne{NMSRs: 1, Index: index}
	r, err := ioctlPtrN(c.fd, kvmGetMSRs, &m)
	if err == nil && r != 1 {
		err = fmt.Errorf("MSR %#x not readable", index)
	}
	return m.Data, wrap("KVM_GET_MSRS", err)
}

// SetMSR writes one MSR with KVM_SET_MSRS.
func (c *VCPU) SetMSR(index uint32, v uint64) error {
	m := msrsOne{NMSRs: 1, Index: index, Data: v}
	r, err := ioctlPtrN(c.fd, kvmSetMSRs, &m)
	if err == nil && r != 1 {
		err = fmt.Errorf("MSR %#x not writable", index)
	}
	return wrap("KVM_SET_MSRS", err)
}

// XSAVE reads the vCPU's FPU and extended state into buf in the standard
// (non-compacted) XSAVE format with KVM_GET_XSAVE2, or KVM_GET_XSAVE when buf
// is XSAVEMinSize bytes. buf must be at least XSAVEMinSize bytes and, for
// state beyond that, as large as KVM_CAP_XSAVE2 reports.
func (c *VCPU) XSAVE(buf []byte) error {
	if len(buf) < XSAVEMinSize {
		return fmt.Errorf("KVM_GET_XSAVE: buffer of %d bytes, want at least %d", len(buf), XSAVEMinSize)
	}
	req, name := kvmGetXSAVE2, "KVM_GET_XSAVE2"
	if len(buf) == XSAVEMinSize {
		req, name = kvmGetXSAVE, "KVM_GET_XSAVE"
	}
	err := ioctlPtr(c.fd, req, &buf[0])
	return wrap(name, err)
}

// SetXSAVE loads the vCPU's FPU and extended state from buf (standard
// format, XCOMP_BV zero) with KVM_SET_XSAVE; KVM reads as many bytes as its
// KVM_CAP_XSAVE2 size.
func (c *VCPU) SetXSAVE(buf []byte) error {
	if len(buf) < XSAVEMinSize {
		return fmt.Errorf("KVM_SET_XSAVE: buffer of %d bytes, want at least %d", len(buf), XSAVEMinSize)
	}
	err := ioctlPtr(c.fd, kvmSetXSAVE, &buf[0])
	return wrap("KVM_SET_XSAVE", err)
}

// XCR0 reads the vCPU's XCR0 with KVM_GET_XCRS.
func (c *VCPU) XCR0() (uint64, error) {
	v, ok, err := c.xcr0()
	if err == nil && !ok {
		err = fmt.Errorf("KVM_GET_XCRS returned no XCR0")
	}
	return v, err
}

// xcr0 is XCR0 that tells a vCPU without XSAVE (KVM lists no XCR for it,
// kvm_vcpu_ioctl_x86_get_xcrs) from a failed read: ok false, no error.
func (c *VCPU) xcr0() (v uint64, ok bool, err error) {
	var x XCRs
	if err := ioctlPtr(c.fd, kvmGetXCRs, &x); err != nil {
		return 0, false, wrap("KVM_GET_XCRS", err)
	}
	for _, r := range x.XCRs[:min(int(x.N), len(x.XCRs))] {
		if r.XCR == 0 {
			return r.Value, true, nil
		}
	}
	return 0, false, nil
}

// SetXCR0 writes the vCPU's XCR0 with KVM_SET_XCRS; KVM refuses (EINVAL)
// a value its own checks reject (kvm_vcpu_ioctl_x86_set_xcrs, __kvm_set_xcr).
func (c *VCPU) SetXCR0(v uint64) error {
	x := XCRs{N: 1}
	x.XCRs[0] = XCR{XCR: 0, Value: v}
	return wrap("KVM_SET_XCRS", ioctlPtr(c.fd, kvmSetXCRs, &x))
}

// SetDebugRegs writes DR0-DR3, DR6 and DR7 with KVM_SET_DEBUGREGS.
func (c *VCPU) SetDebugRegs(d DebugRegs) error {
	return wrap("KVM_SET_DEBUGREGS", ioctlPtr(c.fd, kvmSetDebugRegs, &d))
}

// SetIOEventFD registers (or, with IOEventFDFlagDeassign, removes) an
// ioeventfd with KVM_IOEVENTFD.
func (vm *VM) SetIOEventFD(e IOEventFD) error {
	return wrap("KVM_IOEVENTFD", ioctlPtr(vm.fd, kvmIOEventFD, &e))
}
