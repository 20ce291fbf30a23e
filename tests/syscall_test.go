package tests

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/hostprobe"
	"github.com/govmm/govmm/vmm"
)

// TestSyscallDoorbell: SYSCALL from CPL3 reaches a 64-bit kernel entry with
// the state the architecture defines (the guest checks CS, SS, RCX, R11,
// RFLAGS). On emulating hosts that works only through govmm's doorbell:
// one completed doorbell exit per SYSCALL, and the guest's one deliberate
// write from CPL0, which must be ignored and counted as forged. With the
// doorbell forced off there, the
// guest must fail (SYSCALL stays at CPL3): the test would catch a doorbell
// that is silently always on.
// syscallCmdline tells syscall.elf the RFLAGS this host's SYSCALL leaves at
// the kernel entry. The architecture's is the user RFLAGS & ~FMASK (0x8d7
// here). QEMU's TCG, which runs L2's SYSCALL on the nested AMD-V host,
// clears the arithmetic flags as well (0x2): its helper_syscall
// (target/i386/tcg/seg_helper.c) masks
// env->eflags, which under TCG does not hold them (they are computed
// lazily from CC_SRC/CC_OP), while R11 gets them right. Measured side by
// side: the same guest under QEMU with KVM's in-kernel APIC in that host
// sees the same 0x2.
func syscallCmdline() string {
	if hostprobe.DetectEmulator() == hostprobe.QEMUTCG {
		return "entryflags=0x2"
	}
	return ""
}

func TestSyscallDoorbell(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			g := runGuest(t, "syscall.elf", n, true, syscallCmdline())
			var want, wantForged, wantArm uint64
			if hostEmulates(t) {
				want, wantForged, wantArm = 2, 1, 1
			}
			if got := exits(g.Report.CPUs[0], exitcause.SyscallDoorbell); got != want {
				t.Errorf("completed doorbell exits = %d, want %d", got, want)
			}
			if got := exits(g.Report.CPUs[0], exitcause.SyscallDoorbellForged); got != wantForged {
				t.Errorf("forged doorbell exits = %d, want %d", got, wantForged)
			}
			if got := exits(g.Report.CPUs[0], exitcause.MSRSyscallEntryWrite); got != wantArm {
				t.Errorf("MSRSyscallEntry writes = %d, want %d", got, wantArm)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		needKVM(t)
		if !hostEmulates(t) {
			t.Skip("SKIP: with hardware virtualization SYSCALL works without the doorbell")
		}
		vm, res, console := runGuestRaw(t, "syscall.elf", vmm.Config{CPUs: 1, SyscallDoorbell: vmm.DoorbellOff}, time.Minute)
		// The host's SYSCALL leaves CS at 0x33: fetching the supervisor-only
		// kernel entry at CPL3 faults, with CS 0x33 in the frame.
		if res.Status == 1 || !regexp.MustCompile(`FAIL no exception: vector \d+; frame \S+ \S+ 0:33 `).MatchString(console) {
			t.Errorf("without the doorbell the guest should see SYSCALL stay at CPL3 and fault (status %d):\n%s",
				res.Status, console)
		}
		r := vm.Accounting().Report().CPUs[0]
		if got := exits(r, exitcause.SyscallDoorbell) + exits(r, exitcause.SyscallDoorbellForged); got != 0 {
			t.Errorf("doorbell exits with the doorbell off = %d, want 0", got)
		}
	})
}
