// Command gofloor is the floor VMM of bench/floor written in Go: the same
// guest loops (floorloop.bin, rttloop.bin), the same exits served the
// same least way, the same command line and output lines, with nothing of
// govmm's in it but its thin ioctl package. Beside the C floor it measures
// what the language's runtime costs a VMM whose every exit comes back to
// user space (Go's system-call path around KVM_RUN, its scheduler's
// threads, the signal handler's entry): govmm's ratio to this floor is
// govmm's own cost, its ratio to the C floor that plus Go's
// (docs/exit-cost.md).
//
//	gofloor [-k /dev/kvm] [-c CPU,...] [-yield D] [-raw] BLOB port|mmio|msr|ipi-x2apic|ipi-xapic COUNT [GAP]
//
// As in govmm, each vCPU runs on a goroutine locked to its thread, with
// every signal but the kick and the faults blocked on that thread (so no
// signal of Go's own ends a KVM_RUN), a Go P per vCPU and two more, a
// halted vCPU sleeping on a futex word of its own, and KVM_RUN through
// Go's ordinary system-call path (entersyscall: a VMM must let a
// stop-the-world proceed while a guest runs). -yield D makes each vCPU's
// goroutine yield its P every D (govmm yields every 8 ms, vcpu/loop_yield.go);
// the default is never.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/kvm"
)

const (
	memSize  = 2 << 20
	loadAt   = 0x1000
	stackTop = memSize - 16
)

// vm is the floor's VM: RAM with the blob at loadAt, user-space MSR exits
// for the MSRs KVM does not know without its irqchip (the APIC's).
type vm struct {
	sys *kvm.System
	vm  *kvm.VM
	mem []byte
}

func newVM(kvmPath, blob string) (*vm, error) {
	code, err := os.ReadFile(blob)
	if err != nil {
		return nil, err
	}
	if len(code) == 0 || len(code) > memSize-loadAt-(256<<10) {
		return nil, fmt.Errorf("%s: empty or too large (%d bytes)", blob, len(code))
	}
	mem, err := unix.Mmap(-1, 0, memSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("guest memory: %w", err)
	}
	copy(mem[loadAt:], code)
	sys, err := kvm.Open(kvmPath)
	if err != nil {
		return nil, err
	}
	v, err := sys.CreateVM()
	if err != nil {
		return nil, err
	}
	if err := v.SetUserMemoryRegion(0, 0, mem); err != nil {
		return nil, err
	}
	if err := v.EnableCap(kvm.CapX86UserSpaceMSR, kvm.MSRExitReasonInval|kvm.MSRExitReasonUnknown|kvm.MSRExitReasonFilter); err != nil {
		return nil, err
	}
	return &vm{sys: sys, vm: v, mem: mem}, nil
}

// vcpu makes vCPU id with KVM's supported CPUID, flat 32-bit protected
// mode (the C floor's selectors: rttloop.S and floorloop.S load their own
// GDT) and regs.
func (m *vm) vcpu(id int, regs kvm.Regs) (*kvm.VCPU, error) {
	c, err := m.vm.CreateVCPU(id)
	if err != nil {
		return nil, err
	}
	cpuid, err := m.sys.SupportedCPUID()
	if err != nil {
		return nil, err
	}
	if err := c.SetCPUID(cpuid); err != nil {
		return nil, err
	}
	s, err := c.Sregs()
	if err != nil {
		return nil, err
	}
	flat := func(sel uint16, typ uint8) kvm.Segment {
		return kvm.Segment{Limit: 0xFFFFFFFF, Selector: sel, Type: typ, Present: 1, DB: 1, S: 1, G: 1}
	}
	s.CS = flat(0x08, 0xB)
	s.DS = flat(0x10, 0x3)
	s.ES, s.SS, s.FS, s.GS = s.DS, s.DS, s.DS, s.DS
	s.CR0 = 0x11
	if err := c.SetSregs(s); err != nil {
		return nil, err
	}
	return c, c.SetRegs(regs)
}

// pin and the thread's signal mask: what each vCPU's goroutine does first.
type thread struct {
	out      io.Writer // the report lines
	affinity []int
	yield    time.Duration
	raw      bool
}

// kvmRun is KVM_RUN through Go's system-call path, or (raw) without it.
func (t thread) kvmRun(c *kvm.VCPU) error {
	if !t.raw {
		return c.Run()
	}
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(c.FD()), kvmRunReq, 0); e != 0 {
		return e
	}
	return nil
}

const kvmRunReq = 0xAE80 // _IO(KVMIO, 0x80)

func (t thread) setup(id int) error {
	runtime.LockOSThread()
	if len(t.affinity) > 0 {
		var set unix.CPUSet
		set.Set(t.affinity[id%len(t.affinity)])
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("pinning vCPU %d: %w", id, err)
		}
	}
	var mask unix.Sigset_t
	mask.Val[0] = ^uint64(0)
	for _, s := range []unix.Signal{kickSignal, unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS} {
		mask.Val[0] &^= 1 << (s - 1)
	}
	return unix.PthreadSigmask(unix.SIG_SETMASK, &mask, nil)
}

// yielder yields the goroutine's P every d (never when d is 0), timed
// with RDTSC as govmm's yield is (vcpu/loop_yield.go): in the nested hosts
// Go's clock is a system call.
type yielder struct {
	every, last uint64 // TSC cycles
}

func newYielder(d time.Duration) yielder {
	if d <= 0 {
		return yielder{}
	}
	return yielder{every: uint64(float64(d) * tscPerNS), last: kvm.RDTSC()}
}

func (y *yielder) maybe() {
	if y.every == 0 {
		return
	}
	if kvm.RDTSC()-y.last >= y.every {
		runtime.Gosched()
		y.last = kvm.RDTSC()
	}
}

// tscPerNS is the host TSC's rate, measured over 50 ms at start when
// -yield asks for a yield.
var tscPerNS float64

func measureTSC() {
	t0, c0 := time.Now(), kvm.RDTSC()
	time.Sleep(50 * time.Millisecond)
	tscPerNS = float64(kvm.RDTSC()-c0) / float64(time.Since(t0))
}

var kinds = []string{"port", "mmio", "msr", "ipi-x2apic", "ipi-xapic"}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gofloor: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gofloor", flag.ContinueOnError)
	kvmPath := fs.String("k", "/dev/kvm", "the KVM device")
	cpus := fs.String("c", "", "comma-separated host CPUs: vCPU i's thread on CPU LIST[i mod len]")
	yield := fs.Duration("yield", 0, "each vCPU goroutine yields its P this often (0: never)")
	raw := fs.Bool("raw", false, "KVM_RUN without Go's entersyscall (RawSyscall): measures that path's cost; no VMM may run so, since a stop-the-world then waits for the guest's next exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) < 3 || len(a) > 4 {
		return errors.New("usage: gofloor [-k /dev/kvm] [-c CPU,...] [-yield D] [-raw] BLOB port|mmio|msr|ipi-x2apic|ipi-xapic COUNT [GAP]")
	}
	kind := -1
	for i, k := range kinds {
		if a[1] == k {
			kind = i
		}
	}
	if kind < 0 {
		return fmt.Errorf("kind %s: want %s", a[1], strings.Join(kinds, ", "))
	}
	count, err := strconv.ParseUint(a[2], 0, 32)
	if err != nil || count < 1 {
		return fmt.Errorf("count %q: want a number of 1 or more", a[2])
	}
	gap := uint64(100000)
	if len(a) == 4 {
		if gap, err = strconv.ParseUint(a[3], 0, 32); err != nil {
			return fmt.Errorf("gap %q: want a number", a[3])
		}
	}
	t := thread{out: out, yield: *yield, raw: *raw}
	if *yield > 0 {
		measureTSC()
	}
	if *cpus != "" {
		for _, f := range strings.Split(*cpus, ",") {
			c, err := strconv.Atoi(f)
			if err != nil || c < 0 {
				return fmt.Errorf("-c %s: want a comma-separated list of host CPUs", *cpus)
			}
			t.affinity = append(t.affinity, c)
		}
	}
	// A Go P per vCPU and two more, as govmm (vmm/procs.go): a vCPU
	// coming back from KVM_RUN must find a P free.
	runtime.GOMAXPROCS(pick(kind >= 3, nCPUs, 1) + 2)
	m, err := newVM(*kvmPath, a[0])
	if err != nil {
		return err
	}
	if kind >= 3 {
		return ipiFloor(m, t, a[1], kind-3, uint32(count), uint32(gap))
	}
	return exitFloor(m, t, a[1], kind, uint32(count))
}

func pick(b bool, x, y int) int {
	if b {
		return x
	}
	return y
}
