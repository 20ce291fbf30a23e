// This file holds INIT and SIPI: completing the last exit before INIT,
// turning off KVM's own PV features as INIT does, an AP's (or an INITed
// CPU's) wait for its Startup IPI and the real-mode state SIPI starts it in.

package vcpu

import (
	"fmt"

	"github.com/govmm/govmm/kvm"
	"github.com/govmm/govmm/vlapic"
)

// takeINIT acts on a latched INIT before an entry: the last exit is
// completed, PV EOI and the LAPIC are reset, KVM's own PV features turned
// off, and the CPU waits for its SIPI. On the BSP (its APIC base's BSP
// flag set, KVM's kvm_vcpu_is_bsp) INIT is a reset instead: the VM ends
// (bspINIT). It returns what the LAPIC has for the restarted CPU (look),
// with the timer and CR8 taken from the LAPIC again, or errStop if the VM
// ended while it waited.
func (v *VCPU) takeINIT() (vlapic.Pending, error) {
	v.events.INIT = false
	if v.lapic.Base()&vlapic.BaseBSP != 0 {
		return vlapic.Pending{}, bspINIT(v.id, v.events.INITFrom)
	}
	if err := v.completeExit(); err != nil {
		return vlapic.Pending{}, err
	}
	v.pvReset()
	v.lapic.InitReset()
	if err := disableKVMPV(v.kvm); err != nil {
		return vlapic.Pending{}, err
	}
	if err := v.waitSIPI(); err != nil {
		return vlapic.Pending{}, err
	}
	v.enterGuestState()
	p := v.look()
	v.syncTimer()
	v.cr8 = v.lapic.CR8()
	return p, nil
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
		v.afterRun(err) // a kick that came meanwhile is seen by the look that follows INIT
		if err != nil {
			if endedWithoutExit(err) {
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
		// A park request made before the state above was stored found no
		// sleeper to wake: it is served here, before the sleep. Events
		// latched while parked are taken right after.
		if err := v.maybePark(LoopWaitSIPI, false); err != nil {
			return err
		}
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
			v.counts.Woke()
			return nil
		}
		v.wake.sleep()
		v.maybeDump(nil)
		if v.stopped() {
			return errStop
		}
	}
}

// startAt puts the vCPU where a Startup IPI with vector vec sends it: real
// mode, CS = vec << 8, IP = 0 (SDM 8.4.4.1); everything else as after INIT,
// as KVM's own INIT leaves it (kvm_vcpu_reset with init_event): general
// registers zero but RDX, the processor signature sig; CR0.CD and CR0.NW
// kept (set at RESET, preserved by INIT); CR2, CR3, CR4 and EFER zero;
// DR0-DR3 zero, DR6 and DR7 at their reset values. Register edits an exit
// handler left for the next KVM_RUN to load (sync regs marked dirty)
// belong to the state INIT discarded: they are dropped, and the sync
// copies show the new state.
func startAt(c Hardware, vec uint8, sig uint32) error {
	run := c.RunData()
	run.DirtyRegs = 0
	s, err := c.Sregs()
	if err != nil {
		return err
	}
	seg := func(sel uint16, typ uint8) kvm.Segment {
		return kvm.Segment{Base: uint64(sel) << 4, Limit: 0xFFFF, Selector: sel, Type: typ, Present: 1, S: 1}
	}
	s.CS = seg(uint16(vec)<<8, 0xB)
	s.DS, s.ES, s.FS, s.GS, s.SS = seg(0, 3), seg(0, 3), seg(0, 3), seg(0, 3), seg(0, 3)
	s.TR = kvm.Segment{Limit: 0xFFFF, Type: 0xB, Present: 1}
	s.LDT = kvm.Segment{Limit: 0xFFFF, Type: 0x2, Present: 1}
	s.GDT = kvm.DTable{Limit: 0xFFFF}
	s.IDT = kvm.DTable{Limit: 0xFFFF}
	const cr0ET, cr0CDNW = 0x10, 0x60000000
	s.CR0, s.CR2, s.CR3, s.CR4, s.EFER = cr0ET|s.CR0&cr0CDNW, 0, 0, 0, 0
	s.InterruptBitmap = [4]uint64{} // nothing of before INIT is re-queued
	if err := c.SetSregs(s); err != nil {
		return err
	}
	r := kvm.Regs{RFLAGS: 2, RIP: 0, RDX: uint64(sig)}
	if err := c.SetRegs(r); err != nil {
		return err
	}
	if err := c.SetDebugRegs(kvm.DebugRegs{DR6: kvm.DR6Init, DR7: kvm.DR7Init}); err != nil {
		return err
	}
	run.Sync.Regs, run.Sync.Sregs = r, s
	return nil
}

// kvmPVMemoryMSRs are the MSRs of KVM's own paravirtual features that
// make KVM write into guest memory: kvmclock (both MSR_KVM_SYSTEM_TIME
// numbers), async page faults (MSR_KVM_ASYNC_PF_EN, _INT) and steal time
// (MSR_KVM_STEAL_TIME). KVM serves them in the kernel whether or not govmm
// has an APIC of its own.
var kvmPVMemoryMSRs = [...]uint32{0x12, 0x4B564D01, 0x4B564D02, 0x4B564D06, 0x4B564D03}

// disableKVMPV turns those features off at INIT, as KVM's own INIT does
// (kvm_vcpu_reset: kvmclock_reset, apf.msr_en_val, apf.msr_int_val and
// st.msr_val to 0). KVM never sees govmm's INIT: left on, kvmclock would
// go on updating a page the restarted CPU's new life may use for
// something else. Only a feature the guest turned on is written (KVM
// refuses some of these MSRs outright where the feature is unavailable,
// e.g. async PF without an in-kernel APIC).
func disableKVMPV(c Hardware) error {
	for _, m := range kvmPVMemoryMSRs {
		if v, err := c.GetMSR(m); err != nil || v == 0 {
			continue
		}
		if err := c.SetMSR(m, 0); err != nil {
			return fmt.Errorf("INIT: cannot turn off KVM's PV MSR %#x: %w", m, err)
		}
	}
	return nil
}

// bspINIT is the end of a VM whose guest sent INIT to the BSP. The BSP
// does not wait for a SIPI after INIT: it starts again at the reset
// vector, 0xFFFFFFF0 (SDM 9.1.1 and 9.4; KVM's kvm_apic_accept_events makes
// a BSP runnable after INIT where an AP waits for SIPI, and a SIPI to it
// is ignored), which on a PC is its firmware restarting the machine.
// govmm loads its guest without firmware, so nothing is there to run: the
// VM ends as a reset, an architectural end (ErrShutdown) like a triple
// fault's, never a CPU left waiting for a SIPI that hardware would ignore.
func bspINIT(id, from int) error {
	sender := "a device's message (IOAPIC, MSI or remapped)"
	if from >= 0 {
		sender = fmt.Sprintf("vCPU %d's ICR", from)
	}
	return shutdownError(fmt.Sprintf("guest sent INIT to the BSP (vCPU %d, from %s): it restarts at the reset vector, a machine reset, and govmm runs no firmware there", id, sender))
}
