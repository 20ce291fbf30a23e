// This file implements delivery on the APIC bus (SDM 11.6.1-11.6.2): picking
// the targets of a Message and what each target does when it accepts one.

package vlapic

// Deliver sends m to the LAPICs it addresses and returns how many accepted
// it. Each LAPIC that got something new is notified through the Sink after
// its lock is dropped. It allocates nothing and costs O(destinations)
// unless the LAPICs are in mixed modes (see routes.go).
//
// Lowest priority goes to one target: the one with the lowest PPR among
// those enabled to take it; ties go to the one that has won the fewest
// lowest-priority interrupts so far (so equal-priority CPUs share the load,
// like KVM's arbitration counter), then to the first in destination order.
func (b *Bus) Deliver(m Message) int { return b.DeliverObserved(m, nil) }

// DeliverObserved is Deliver that also calls accepted(cpu) for each LAPIC
// that accepted m (nil: none), after that LAPIC's lock is dropped: device
// interrupts are accounted per destination CPU.
func (b *Bus) DeliverObserved(m Message, accepted func(cpu int)) int {
	if m.Delivery == LowestPriority {
		return b.deliverLowest(&m, accepted)
	}
	n := 0
	b.forTargets(&m, func(a *LAPIC) {
		acc, notify := a.accept(&m)
		if acc {
			n++
			if accepted != nil {
				accepted(a.cpu)
			}
		}
		if notify {
			b.sink.Notify(a.cpu)
		}
	})
	return n
}

func (b *Bus) deliverLowest(m *Message, accepted func(cpu int)) int {
	var best *LAPIC
	var bestPPR uint32
	var bestWins uint64
	b.forTargets(m, func(a *LAPIC) {
		if !a.fixedOK.Load() {
			return
		}
		p, w := a.ppr.Load(), a.lpWins.Load()
		if best == nil || p < bestPPR || (p == bestPPR && w < bestWins) {
			best, bestPPR, bestWins = a, p, w
		}
	})
	if best == nil {
		return 0
	}
	best.lpWins.Add(1)
	acc, notify := best.accept(m)
	if notify {
		b.sink.Notify(best.cpu)
	}
	if !acc {
		return 0
	}
	if accepted != nil {
		accepted(best.cpu)
	}
	return 1
}

// accept is the target side of a delivery, as KVM's __apic_accept_irq: it
// reports whether the LAPIC accepted m and whether its vCPU has something
// new (an error interrupt counts, though the message was refused).
//   - A hardware-disabled LAPIC accepts nothing.
//   - Fixed and lowest priority need a software-enabled LAPIC; a level
//     de-assert is dropped; a vector below 16 sets ESR "received illegal
//     vector" instead of IRR. TMR records the trigger mode.
//   - NMI, INIT, SIPI and ExtINT are latched as Events even when the LAPIC
//     is software-disabled. INIT discards a latched SIPI; an INIT level
//     de-assert is ignored. SMI is accepted and dropped.
//
// In AVIC mode a fixed or lowest-priority edge interrupt with a legal
// vector is posted lock-free (postEdge); everything else takes the locked
// path below, which folds the posted vectors first so that a level
// interrupt's TMR bit is never cleared by an edge interrupt that came
// before it.
func (a *LAPIC) accept(m *Message) (acc, notify bool) {
	if a.bus.avic && m.Trigger == Edge && (m.Delivery == Fixed || m.Delivery == LowestPriority) && m.Vector >= 16 {
		return a.postEdge(m.Vector, m.Trace)
	}
	a.mu.Lock()
	a.foldLocked()
	if a.mode == ModeDisabled {
		a.mu.Unlock()
		return false, false
	}
	switch m.Delivery {
	case Fixed, LowestPriority:
		if m.Trigger == Level && !m.Assert || a.svr&svrEnable == 0 {
			break
		}
		if m.Vector < 16 {
			notify = a.errorLocked(esrRecvIllegal)
			break
		}
		a.irr.set(m.Vector)
		a.tmr.put(m.Vector, m.Trigger == Level)
		a.observeAccepted(m.Vector, m.Trace)
		acc, notify = true, true
	case NMI:
		a.ev.NMIs = min(a.ev.NMIs+1, MaxLatchedNMIs)
		acc, notify = true, true
	case INIT:
		if m.Trigger == Level && !m.Assert {
			break
		}
		a.ev.INIT, a.ev.INITFrom, a.ev.SIPI, a.ev.SIPIVector = true, m.Source, false, 0
		acc, notify = true, true
	case StartUp:
		a.ev.SIPI, a.ev.SIPIVector = true, m.Vector
		acc, notify = true, true
	case ExtINT:
		a.ev.ExtINT = true
		acc, notify = true, true
	case SMI:
		a.ev.SMI = true
		acc, notify = true, true
	}
	a.mu.Unlock()
	return acc, notify
}

// errorLocked records an error in the accumulating ESR and raises the LVT
// error interrupt if it is unmasked; it reports whether IRR changed.
func (a *LAPIC) errorLocked(bit uint32) bool {
	a.esrAcc |= bit
	return a.localDeliverLocked(lvtError)
}

// localDeliverLocked raises a local (LVT) interrupt as a fixed, edge
// interrupt. The LVTs are forced masked while software-disabled.
func (a *LAPIC) localDeliverLocked(idx int) bool {
	lvt := a.lvt[idx]
	if lvt&lvtMasked != 0 || a.mode == ModeDisabled {
		return false
	}
	v := uint8(lvt)
	if v < 16 {
		if idx != lvtError {
			return a.errorLocked(esrRecvIllegal)
		}
		a.esrAcc |= esrRecvIllegal
		return false
	}
	a.irr.set(v)
	a.tmr.clear(v)
	return true
}
