package vcpu

import "github.com/govmm/govmm/kvm"

// The loop's calls to its vCPU at every exit and injection, direct when
// the vCPU is KVM's own (*kvm.VCPU: New copies it to direct): through the
// Hardware interface each of them read its itab, a read-only data page
// of its own, one page more at every exit in the nested AMD-V host
// (docs/exit-cost.md). Tests' fake vCPUs go through the interface, as
// every call off these paths does.

func (v *VCPU) hwRun() error {
	if v.isDirect {
		return v.direct.Run()
	}
	return v.kvm.Run()
}

func (v *VCPU) hwRunRaw() error {
	if v.isDirect {
		return v.direct.RunRaw()
	}
	return v.kvm.RunRaw()
}

func (v *VCPU) hwSetImmediateExit(on bool) {
	if v.isDirect {
		v.direct.SetImmediateExit(on)
		return
	}
	v.kvm.SetImmediateExit(on)
}

func (v *VCPU) hwSetRequestInterruptWindow(on bool) {
	if v.isDirect {
		v.direct.SetRequestInterruptWindow(on)
		return
	}
	v.kvm.SetRequestInterruptWindow(on)
}

func (v *VCPU) hwInterrupt(vector uint8) error {
	if v.isDirect {
		return v.direct.Interrupt(vector)
	}
	return v.kvm.Interrupt(vector)
}

func (v *VCPU) hwIO() (*kvm.IOExit, []byte) {
	if v.isDirect {
		return v.direct.IO()
	}
	return v.kvm.IO()
}

func (v *VCPU) hwMMIO() *kvm.MMIOExit {
	if v.isDirect {
		return v.direct.MMIO()
	}
	return v.kvm.MMIO()
}

func (v *VCPU) hwMSR() *kvm.MSRExit {
	if v.isDirect {
		return v.direct.MSR()
	}
	return v.kvm.MSR()
}
