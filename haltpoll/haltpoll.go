// Package haltpoll decides how long a halted vCPU's thread polls for a
// wake-up before it sleeps, adaptively, by the rule KVM applies to its own
// halted vCPUs (kvm_vcpu_halt, grow_halt_poll_ns and shrink_halt_poll_ns in
// Linux's virt/kvm/kvm_main.c). govmm's vCPUs halt in user space (KVM
// exits on HLT without an in-kernel APIC), so KVM's polling never runs for
// them: a wake-up that comes a few microseconds after HLT would otherwise
// pay a futex sleep and a scheduler wake-up.
//
// The rule, per vCPU, with a window W that starts at 0:
//   - a halt polls for up to W before it sleeps;
//   - a halt that ended within W (a poll hit) leaves W alone;
//   - a halt longer than Max (a long idle) shrinks W;
//   - a shorter halt (W was too small to catch it) grows W, from
//     GrowStart, by the factor Grow, up to Max;
//   - a wake-up that was not a real one (the VM ending) shrinks W.
//
// Window is a pure state machine: the vCPU loop measures the halt and
// reports it with Done; nothing here reads a clock or touches a thread.
package haltpoll

import "time"

// Policy is the rule's parameters (KVM's module parameters halt_poll_ns,
// halt_poll_ns_grow_start, halt_poll_ns_grow and halt_poll_ns_shrink).
// The zero Policy never polls.
type Policy struct {
	// Max bounds the window (KVM: halt_poll_ns, on x86 by default
	// KVM_HALT_POLL_NS_DEFAULT, 200 us). 0: no polling.
	Max time.Duration
	// GrowStart is the first window a growing one takes (KVM: 10 us).
	GrowStart time.Duration
	// Grow multiplies the window when it grows (KVM: 2); 0 never grows.
	Grow uint
	// Shrink divides the window when it shrinks; 0 resets it to 0 (KVM:
	// 0 in Linux 6.1, which resets; 2 in 6.12, which halves).
	Shrink uint
}

// KVM is the policy of KVM's defaults on x86 (Linux 6.12).
var KVM = Policy{Max: 200 * time.Microsecond, GrowStart: 10 * time.Microsecond, Grow: 2, Shrink: 2}

// WithMax is p with its bound set to max (0 turns polling off).
func (p Policy) WithMax(max time.Duration) Policy {
	p.Max = max
	return p
}

// Window is one vCPU's polling window. The zero Window with a zero Policy
// never polls. It belongs to the vCPU's own thread.
type Window struct {
	p Policy
	w time.Duration
}

// New is a window under p, starting at 0 (the first halts sleep at once
// and teach the window how long they are).
func New(p Policy) *Window { return &Window{p: p} }

// Poll is how long the next halt polls before it sleeps (0: it sleeps at
// once).
func (w *Window) Poll() time.Duration {
	if w.w > w.p.Max {
		w.w = w.p.Max
	}
	return w.w
}

// Done adjusts the window after a halt that lasted halted in all (polling
// included). valid is false when the halt did not end with a wake-up the
// guest can take (the VM ended).
//
// Polling off, it is a test the compiler inlines into the vCPU's halt: the
// whole function was too big to, and ran on two pages of code of its own,
// two pages more at every halt in the nested AMD-V host, where each page
// an exit's VMM touches costs it (docs/exit-cost.md).
func (w *Window) Done(halted time.Duration, valid bool) {
	if w.p.Max == 0 {
		w.w = 0
		return
	}
	w.adjust(halted, valid)
}

// adjust is Done with polling on.
func (w *Window) adjust(halted time.Duration, valid bool) {
	switch {
	case !valid:
		w.shrink()
	case halted <= w.w: // the poll saw the wake-up
	case w.w > 0 && halted > w.p.Max: // a long idle: polling only burns CPU
		w.shrink()
	case w.w < w.p.Max && halted < w.p.Max: // a short halt the poll missed
		w.grow()
	}
}

func (w *Window) grow() {
	if w.p.Grow == 0 {
		return
	}
	n := w.w * time.Duration(w.p.Grow)
	if n < w.p.GrowStart {
		n = w.p.GrowStart
	}
	w.w = min(n, w.p.Max)
}

func (w *Window) shrink() {
	if w.p.Shrink == 0 {
		w.w = 0
		return
	}
	w.w /= time.Duration(w.p.Shrink)
}
