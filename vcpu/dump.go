// This file holds the vCPU's state dump (kill -USR2, --stall-dump): its
// registers, RIP named from the kernel's symbols, LAPIC and stack.

package vcpu

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/govmm/govmm/complete"
	"github.com/govmm/govmm/ksyms"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// RequestDump asks the vCPU to print where it is (state, RIP, IF, its
// LAPIC's TPR/PPR/ISR/IRR, its event log) to w; this is how 'kill -USR2'
// on govmm shows a guest that seems stuck. The vCPU's own thread prints
// it, since the registers and the event log are that thread's: a running
// vCPU is kicked and prints at its exit, a halted one (or one waiting for
// a SIPI) is woken, prints, and sleeps again. Only a vCPU whose loop has
// ended is printed from here. The dump is asynchronous: w must take
// writes from other goroutines.
func (v *VCPU) RequestDump(w io.Writer) {
	v.dumpTo.Store(&w)
	v.Notify()
	if v.State() == StateStopped {
		// The loop stored StateStopped after its last log write; the swap
		// decides between it (it serves requests on its way out) and us.
		if p := v.dumpTo.Swap(nil); p != nil {
			v.dump(*p, nil)
		}
	}
}

// DumpNow prints the vCPU's state from the calling thread, for a vCPU
// whose thread will not serve a request (one stuck inside KVM_RUN): its
// LAPIC and event log, with no registers (only its thread may read them).
func (v *VCPU) DumpNow(w io.Writer) { v.dump(w, nil) }

// LastExit is the KVM exit reason (KVM_EXIT_*) of the vCPU's newest exit
// still in its event log; false if there is none. Only once Run has
// returned (the log is the vCPU thread's): a test's view of where each vCPU
// was when the VM ended (a halted one last exited on HLT).
func (v *VCPU) LastExit() (uint32, bool) { return v.log.lastExit() }

// ParkedByINIT says whether the vCPU's newest event is an INIT it acted
// on, so that it waited for a SIPI when the VM ended. Only once Run has
// returned, as LastExit.
func (v *VCPU) ParkedByINIT() bool { return v.log.parkedByINIT() }

// maybeDump runs on the vCPU thread after each KVM_RUN and each wake-up
// of a halted or SIPI-waiting vCPU (run is then the kvm_run of its last
// exit, or nil before the first). A plain load first: a dump is rare, and
// an atomic swap on every exit is not free (a request that lands after the
// load is served at the next exit or wake-up: RequestDump notifies after
// it stores).
// The load is all that is inlined into the loop; takeDump does the rest.
func (v *VCPU) maybeDump(run *kvm.Run) {
	if v.dumpTo.Load() != nil {
		v.takeDump(run)
	}
}

// takeDump serves the dump request maybeDump saw, if it is still there.
func (v *VCPU) takeDump(run *kvm.Run) {
	if p := v.dumpTo.Swap(nil); p != nil {
		v.dump(*p, run)
	}
}

func (v *VCPU) dump(w io.Writer, run *kvm.Run) {
	st, which := v.lapicState(run)
	bits := func(b [8]uint32) string {
		var vs []string
		for i := 255; i >= 0; i-- {
			if b[i/32]>>(i%32)&1 != 0 {
				vs = append(vs, fmt.Sprintf("%#x", i))
			}
		}
		return "[" + strings.Join(vs, " ") + "]"
	}
	where, stack := "(no exit)", ""
	var syms *ksyms.Table
	if v.syms != nil {
		syms = v.syms()
	}
	if run != nil {
		r := &run.Sync.Regs
		where = fmt.Sprintf("RIP %#x", r.RIP)
		if n := syms.Name(r.RIP); n != "" {
			where += " " + n
		}
		if s, err := v.sregs(); err == nil {
			where += fmt.Sprintf(" CPL %d IF %d exit %d", s.CS.DPL, r.RFLAGS>>9&1, run.ExitReason)
			stack = v.stackNames(syms, s, r.RSP)
		}
	}
	fmt.Fprintf(w, "vCPU %d: %s %s | %sAPIC ID %d mode %d TPR %#x PPR %#x ISR %s IRR %s\n",
		v.id, v.State(), where, which, st.ID, st.Mode, st.TPR, st.PPR, bits(st.ISR), bits(st.IRR))
	if stack != "" {
		fmt.Fprintf(w, "vCPU %d: stack %s\n", v.id, stack)
	}
	fmt.Fprintf(w, "vCPU %d: last events %v\n", v.id, &v.log)
}

// Dump stack scan bounds: words read from RSP, names printed.
const (
	dumpStackWords = 256
	dumpStackNames = 12
)

// stackNames scans the guest's kernel stack from rsp for words that fall
// in kernel functions, the way Linux's own unreliable backtraces do ("?"
// entries): with the ORC unwinder there are no frame pointers to follow,
// and govmm has no ORC tables, so return addresses found on the stack are
// the best available call chain. Words are 8 bytes in 64-bit code, 4 in
// 32-bit code. It stops at the first unmapped page.
func (v *VCPU) stackNames(syms *ksyms.Table, s *kvm.Sregs, rsp uint64) string {
	if syms == nil || s.CS.DPL != 0 {
		return ""
	}
	word := uint64(8)
	if s.CS.L == 0 {
		word, rsp = 4, rsp&0xFFFFFFFF
	}
	var names []string
	for i := uint64(0); i < dumpStackWords && len(names) < dumpStackNames; i++ {
		b, err := complete.GuestBytes(v.mem, s, rsp+word*i, word)
		if err != nil {
			break
		}
		var w uint64
		if word == 8 {
			w = binary.LittleEndian.Uint64(b)
		} else {
			w = uint64(binary.LittleEndian.Uint32(b))
		}
		if n := syms.Name(w); n != "" {
			names = append(names, n)
		}
	}
	return strings.Join(names, " < ")
}

// lapicState is the vCPU's LAPIC for a dump, and which LAPIC it is: govmm's
// own, or KVM's ("KVM's "), read with KVM_GET_LAPIC on this thread when
// run is this exit's (after the loop ended the vCPU is KVM's no more to
// read from another thread: only the ID is then unknown).
func (v *VCPU) lapicState(run *kvm.Run) (vlapic.State, string) {
	if v.lapic != nil {
		return v.lapic.Snapshot(), ""
	}
	if run == nil {
		return vlapic.State{}, "KVM's (not read off its thread) "
	}
	page, err := v.inKernel.LAPIC()
	if err != nil {
		return vlapic.State{}, fmt.Sprintf("KVM's (%v) ", err)
	}
	return vlapic.StateFromPage(page.Regs[:], run.APICBase), "KVM's "
}
