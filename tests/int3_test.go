package tests

import (
	"os"
	"testing"

	"github.com/govmm/govmm/accounting"
)

// TestInt3Recovery: in 64-bit kernel mode this host's emulator cannot run
// int3; govmm advances RIP and injects #BP, and the guest checks that its
// handler ran once per int3 and execution went on right after each one.
func TestInt3Recovery(t *testing.T) {
	g := runGuest(t, "int3.elf", 1, true, "")
	want := uint64(0) // hardware virtualization runs int3 itself
	if emulatingHost() {
		want = 3
	}
	if got := exits(g.Report.Total, accounting.CauseRecoverInt3); got != want {
		t.Errorf("int3 recoveries = %d, want %d", got, want)
	}
}

// emulatingHost reports whether KVM here interprets guest kernel code (the
// kvm_pvm module of HOST.md) rather than using VT-x/AMD-V.
func emulatingHost() bool {
	_, err := os.Stat("/sys/module/kvm_pvm")
	return err == nil
}
