package vcpu

import (
	"fmt"
	"io"
	"strings"

	"github.com/govmm/govmm/kvm"
)

// RequestDump asks the vCPU to print where it is (state, RIP, IF, its
// LAPIC's TPR/PPR/ISR/IRR) to w at its next exit; a running vCPU is kicked
// for it. This is how 'kill -USR2' on govmm shows a guest that seems stuck.
func (v *VCPU) RequestDump(w io.Writer) {
	v.dumpTo.Store(&w)
	v.Notify()
	if s := v.State(); s == StateHalted || s == StateWaitSIPI || s == StateStopped {
		v.dump(w, nil) // no exit will come: report from here
		v.dumpTo.Store(nil)
	}
}

// maybeDump runs on the vCPU thread after each KVM_RUN.
func (v *VCPU) maybeDump(run *kvm.Run) {
	if p := v.dumpTo.Swap(nil); p != nil {
		v.dump(*p, run)
	}
}

func (v *VCPU) dump(w io.Writer, run *kvm.Run) {
	st := v.lapic.Snapshot()
	bits := func(b [8]uint32) string {
		var vs []string
		for i := 255; i >= 0; i-- {
			if b[i/32]>>(i%32)&1 != 0 {
				vs = append(vs, fmt.Sprintf("%#x", i))
			}
		}
		return "[" + strings.Join(vs, " ") + "]"
	}
	where := "(no exit)"
	if run != nil {
		where = fmt.Sprintf("RIP %#x IF %d exit %d", run.Sync.Regs.RIP, run.Sync.Regs.RFLAGS>>9&1, run.ExitReason)
	}
	fmt.Fprintf(w, "vCPU %d: %s %s | APIC ID %d mode %d TPR %#x PPR %#x ISR %s IRR %s\n",
		v.id, v.State(), where, st.ID, st.Mode, st.TPR, st.PPR, bits(st.ISR), bits(st.IRR))
}
