// This file holds a vCPU's architectural state as KVM holds it, read and
// written whole for a snapshot (govmm snapshot, govmm restore): general,
// segment and control registers, FPU and extended state, XCR0, the MSRs a
// guest's kernel relies on, debug registers, pending events and the MP
// state. Nothing here is govmm's own (its LAPIC, its loop's state): those
// are saved by their packages.

package kvm

import "fmt"

// MSRValue is one MSR's value.
type MSRValue struct {
	Index uint32
	Data  uint64
}

// VCPUState is a vCPU's state as KVM holds it.
type VCPUState struct {
	Regs  Regs
	Sregs Sregs
	XSAVE []byte // standard format, KVM_GET_XSAVE2's size
	// XCR0, where the vCPU has XSAVE (HasXCR0): KVM_GET_XCRS lists no XCR
	// at all on a host without it (the nested VT-x host's Bochs).
	XCR0    uint64
	HasXCR0 bool
	MSRs    []MSRValue // those of SnapshotMSRs this host's KVM has
	Debug   DebugRegs
	Events  VCPUEvents
	MPState uint32
}

// SnapshotMSRs are the MSRs a snapshot saves where KVM has them (what
// QEMU's kvm_put_msrs carries for a guest of this kind): the TSC first,
// which KVM turns into the vCPU's TSC offset, then SYSENTER and SYSCALL,
// PAT, MISC_ENABLE, TSC_AUX, the MTRRs, and kvmclock's, async page
// faults', steal time's and PV EOI's MSRs. APIC_BASE, TSC_DEADLINE and
// govmm's own MSRs are the LAPIC's state, saved with it.
var SnapshotMSRs = []uint32{
	0x10,  // IA32_TSC
	0x3B,  // IA32_TSC_ADJUST
	0x174, // SYSENTER_CS
	0x175, // SYSENTER_ESP
	0x176, // SYSENTER_EIP
	0x1A0, // MISC_ENABLE
	0x277, // PAT
	0x2FF, // MTRRdefType
	0x250, // MTRRfix64K_00000
	0x258, // MTRRfix16K_80000
	0x259, // MTRRfix16K_A0000
	0x268, // MTRRfix4K_C0000 ... F8000
	0x269, 0x26A, 0x26B, 0x26C, 0x26D, 0x26E, 0x26F,
	0x200, 0x201, 0x202, 0x203, 0x204, 0x205, 0x206, 0x207, // MTRRphysBase/Mask 0-3
	0xC0000081, // STAR
	0xC0000082, // LSTAR
	0xC0000083, // CSTAR
	0xC0000084, // SYSCALL_MASK
	0xC0000102, // KERNEL_GS_BASE
	0xC0000103, // TSC_AUX
	0x4B564D00, // kvmclock wall clock
	0x4B564D01, // kvmclock system time
	0x4B564D02, // async page fault
	0x4B564D03, // steal time
}

// SaveState reads the vCPU's state; xsaveSize is KVM_CAP_XSAVE2's size
// (0 or less: XSAVEMinSize). An MSR of msrs that KVM cannot read on this
// host is left out; its restore then leaves it at its reset value. The
// vCPU must not be in KVM_RUN, and an exit's I/O must have been completed
// (KVM_RUN with immediate_exit) so that the registers are the
// instruction's after it.
func (c *VCPU) SaveState(msrs []uint32, xsaveSize int) (VCPUState, error) {
	var s VCPUState
	var err error
	if s.Regs, err = c.Regs(); err != nil {
		return s, err
	}
	if s.Sregs, err = c.Sregs(); err != nil {
		return s, err
	}
	s.XSAVE = make([]byte, max(xsaveSize, XSAVEMinSize))
	if err = c.XSAVE(s.XSAVE); err != nil {
		return s, err
	}
	if s.XCR0, s.HasXCR0, err = c.xcr0(); err != nil {
		return s, err
	}
	for _, i := range msrs {
		v, err := c.GetMSR(i)
		if err != nil {
			continue // not this host's (KVM read none of it)
		}
		s.MSRs = append(s.MSRs, MSRValue{i, v})
	}
	if s.Debug, err = c.DebugRegs(); err != nil {
		return s, err
	}
	if s.Events, err = c.Events(); err != nil {
		return s, err
	}
	s.MPState, err = c.MPState()
	return s, err
}

// RestoreState writes s into the vCPU in the order QEMU's
// kvm_arch_put_registers uses: registers, extended state, XCR0, segment
// and control registers, MSRs, MP state, events (with the NMI, SIPI and
// SMM fields valid), debug registers.
func (c *VCPU) RestoreState(s VCPUState) error {
	if err := c.SetRegs(s.Regs); err != nil {
		return err
	}
	if err := c.SetXSAVE(s.XSAVE); err != nil {
		return err
	}
	if s.HasXCR0 {
		if err := c.SetXCR0(s.XCR0); err != nil {
			return err
		}
	}
	if err := c.SetSregs(s.Sregs); err != nil {
		return err
	}
	for _, m := range s.MSRs {
		if err := c.SetMSR(m.Index, m.Data); err != nil {
			return fmt.Errorf("restoring MSR %#x: %w", m.Index, err)
		}
	}
	if err := c.SetMPState(s.MPState); err != nil {
		return err
	}
	// The SIPI vector (of an MP state SIPI_RECEIVED on KVM's LAPIC) and
	// SMM's state (in SMM, an SMI pending, an INIT latched there) too:
	// KVM ignores both for a vCPU whose LAPIC is in user space, and takes
	// a zero SMM state where the host has no SMM.
	ev := s.Events
	ev.Flags = VCPUEventValidNMIPending | VCPUEventValidShadow | VCPUEventValidSIPIVector | VCPUEventValidSMM
	if err := c.SetEvents(ev); err != nil {
		return err
	}
	return c.SetDebugRegs(s.Debug)
}
