package vcpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/govmm/govmm/exitbus"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// Two NMIs that reach a vCPU while it runs guest code (one sent by itself,
// one by another CPU, as kvm-unit-tests' "multiple NMI" test sends them)
// are two KVM_NMI at its next entry: KVM keeps both, one to inject and one
// latched behind it, as its own LAPIC would. A third one at once is no
// more than the architecture can hold.
func TestTwoNMIsAreTwo(t *testing.T) {
	for _, n := range []int{2, 3} {
		r := newRig(t, 1)
		s := open(kvm.ExitIRQWindowOpen)
		s.guest = func(*fakeCPU) {
			for range n {
				r.apics.Deliver(vlapic.Message{Delivery: vlapic.NMI, Dest: 0, Source: -1})
			}
		}
		f := newFake(s, outb(0x80, 0))
		r.fakes[0] = f
		r.runOne()
		if want := min(n, vlapic.MaxLatchedNMIs); f.nmis != want || r.acct.CPUs[0].NMIs.Load() != uint64(want) {
			t.Errorf("%d NMIs sent: %d KVM_NMI, %d counted, want %d", n, f.nmis, r.acct.CPUs[0].NMIs.Load(), want)
		}
	}
}

// TestRefusedInjectionStopsTheVM: an NMI KVM_NMI refuses, or a vector the
// LAPIC has acknowledged (it is in service) that KVM_INTERRUPT refuses,
// would be lost for good: the loop ends with an error naming it, which
// stops the VM, and never goes on as if it were delivered.
func TestRefusedInjectionStopsTheVM(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  vlapic.Message
		want string
	}{
		{"NMI", vlapic.Message{Delivery: vlapic.NMI, Dest: 0, Source: -1}, "NMI"},
		{"fixed", vlapic.Message{Vector: 0x40, Dest: 0, Source: -1}, "injecting vector 0x40"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, 1)
			s := open(kvm.ExitIRQWindowOpen)
			s.guest = func(*fakeCPU) { r.apics.Deliver(c.msg) }
			f := newFake(s, outb(0x80, 0))
			f.nmiErr, f.intErr = errors.New("refused"), errors.New("refused")
			r.fakes[0] = f
			r.build()
			err := r.cpus[0].Run()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("loop ended with %v, want %q refused", err, c.want)
			}
		})
	}
}

// TestRefusedExceptionStopsTheVM: an exception a device raises for the
// guest (#GP for a forged access, say) that KVM_SET_VCPU_EVENTS refuses is
// an error out of the loop, not an access quietly completed.
func TestRefusedExceptionStopsTheVM(t *testing.T) {
	r := newRig(t, 1)
	r.register(exitbus.Range{Space: exitbus.PIO, Base: 0x500, Len: 1, Name: "raises #GP",
		Cause: exitbus.Fixed(exitcause.PIOOther), Handler: exitbus.HandlerFunc(func(a *exitbus.Access) error {
			code := uint32(0)
			return a.VCPU.InjectException(13, &code)
		})})
	f := newFake(outb(0x500, 1), outb(0x80, 0))
	f.eventsErr = errors.New("refused")
	r.fakes[0] = f
	r.build()
	err := r.cpus[0].Run()
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("loop ended with %v, want the refused exception", err)
	}
	if f.exc >= 0 {
		t.Errorf("exception %d queued though KVM refused it", f.exc)
	}
}

// An SMI the LAPIC accepts (an IPI or a message with delivery mode SMI)
// is one KVM_SMI at the vCPU's next entry, as KVM's own LAPIC makes it
// (kvm_inject_smi), and it ends a HLT even with IF=0. On a host whose KVM
// has no SMM it is counted as dropped and logged, never injected.
func TestSMI(t *testing.T) {
	smi := vlapic.Message{Delivery: vlapic.SMI, Dest: 0, Source: -1}
	t.Run("running", func(t *testing.T) {
		r := newRig(t, 1)
		s := open(kvm.ExitIRQWindowOpen)
		s.guest = func(*fakeCPU) { r.apics.Deliver(smi) }
		f := newFake(s, outb(0x80, 0))
		r.fakes[0] = f
		r.runOne()
		if c := &r.acct.CPUs[0]; f.smis != 1 || c.SMIs.Load() != 1 || c.SMIsDropped.Load() != 0 {
			t.Errorf("%d KVM_SMI, %d counted, %d dropped; want 1, 1, 0", f.smis, c.SMIs.Load(), c.SMIsDropped.Load())
		}
		if log := r.cpus[0].log.String(); !strings.Contains(log, "SMI@") {
			t.Errorf("event log %q has no SMI", log)
		}
	})
	t.Run("halted-IF0", func(t *testing.T) {
		r := newRig(t, 1)
		f := newFake(exitAt(kvm.ExitHLT, true, false), outb(0x80, 0))
		r.fakes[0] = f
		wait := r.start()
		r.waitState(0, StateHalted)
		r.apics.Deliver(smi)
		wait()
		if f.smis != 1 {
			t.Errorf("%d KVM_SMI after an SMI to a halted vCPU, want 1", f.smis)
		}
	})
	t.Run("no-SMM", func(t *testing.T) {
		r := newRig(t, 1)
		r.noSMM = true
		s := open(kvm.ExitIRQWindowOpen)
		s.guest = func(*fakeCPU) { r.apics.Deliver(smi) }
		f := newFake(s, outb(0x80, 0))
		r.fakes[0] = f
		r.runOne()
		if c := &r.acct.CPUs[0]; f.smis != 0 || c.SMIs.Load() != 0 || c.SMIsDropped.Load() != 1 {
			t.Errorf("%d KVM_SMI, %d counted, %d dropped; want 0, 0, 1", f.smis, c.SMIs.Load(), c.SMIsDropped.Load())
		}
		if log := r.cpus[0].log.String(); !strings.Contains(log, "SMI dropped (no SMM)") {
			t.Errorf("event log %q does not show the dropped SMI", log)
		}
	})
}
