// Package vcpu runs one virtual CPU: a goroutine locked to its OS thread that
// enters the guest with KVM_RUN, dispatches every exit to govmm's devices and
// local APIC, injects interrupts, sleeps while the guest halts and counts
// every exit in the accounting.
//
// The path of an IPI through this package: the guest's ICR write exits
// (MMIO or WRMSR) -> handleMMIO/x2apic or busMSR -> exitbus -> vlapic -> the target LAPIC's IRR
// (with AVIC-style delivery: its IRR backing page, no target lock) ->
// vlapic.Sink.Notify -> VCPU.Notify on the target (kick or wake) -> the
// target's loop, which folds the backing page as it looks for a vector ->
// inject (KVM_INTERRUPT). docs/ipi-path.md walks it function by function.
//
// Measurement is not on that path: the LAPICs and the loop tell their
// observer (vlapic.Observer, the LAPIC's: accounting.Observer in govmm)
// of injections and of the exits made for an interrupt (HLT, kick,
// window), and nothing they do depends on it; the loop counts its own
// exits by cause and its kicks, wake-ups and halt polls through Counters
// (Config.Counters: accounting.VCPU in govmm, NopCounters without).
//
// The loop asks the KVM vCPU for nothing but Hardware (a *kvm.VCPU in
// govmm, whose calls at every exit it makes on it directly:
// loop_direct.go), so its unit tests (loop_test.go) run it on a scripted fake
// (fake_test.go) with real LAPICs, accounting and exit bus, no /dev/kvm.
//
// Files: the loop (loop.go, loop_cede.go, loop_direct.go, loop_exits.go,
// loop_inject.go, kick.go, loop_halt.go, loop_wake.go, loop_timer.go,
// initsipi.go, entry.go) and diagnostics (dump.go, eventlog.go). The
// loop's files are named to sort together: Go lays out a package's code
// in the order of its files, so the functions an exit runs sit on few
// pages (loop.go).
// The instructions the host's emulator gives up on are package complete's:
// the loop enters it through one call (recover, in loop_exits.go) and counts
// the exit by the cause it returns.
package vcpu
