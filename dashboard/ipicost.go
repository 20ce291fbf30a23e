package dashboard

import (
	"github.com/govmm/govmm/accounting"
)

// Exits per IPI, by destination kind.
//
// The accounting counts exits per vCPU and cause, and IPIs per sending
// vCPU and destination kind, but no exit carries the kind of the IPI it
// served. The dashboard attributes them interval by interval (one
// sampling interval, Options.Interval):
//
//   - Sender exits: the IPI-sending exits of a vCPU (ipiSend: xAPIC MMIO
//     reads and writes of ICR and ICR2, x2APIC WRMSR/RDMSR of the ICR and
//     SELF_IPI, the PV send-IPI) in an interval are shared among the kinds
//     that vCPU sent in that interval, in proportion to how many of each it
//     sent. Such exits in an interval in which the vCPU sent no IPI are
//     unattributed.
//     sender_exits_per_ipi[K] = attributed sender exits[K] / sent[K].
//   - Receiver exits: the LAPIC EOI writes, kick exits and HLT exits of
//     all vCPUs in an interval are shared among the kinds delivered in that
//     interval, in proportion to deliveries (targets reached) of each.
//     receiver_exits_per_delivery[K] = attributed receiver exits[K] /
//     delivered[K].
//   - exits_per_ipi[K] = (attributed sender + receiver exits[K]) / sent[K]:
//     the whole cost in exits of one IPI of kind K, fan-out included.
//
// Both are exact when, in every interval, each vCPU sends one kind only
// and the receivers' EOI/kick/HLT exits are all caused by IPIs (as in the
// ipi guest's sections); otherwise they are per-interval averages. Timer
// and device interrupts also end in EOI and HLT: with them, receiver cost
// is an upper bound. receiver_exits_per_injection per vCPU is the simpler,
// kind-blind figure: (EOI + kick + HLT exits) / injected vectors.
type ipiAttrib struct {
	sender, receiver     [numKinds]float64
	unattributedSender   float64
	unattributedReceiver float64
	sent, delivered      [numKinds]uint64 // totals up to the last sample
}

// add attributes the exits between samples prev and cur.
func (a *ipiAttrib) add(prev, cur *sample) {
	var recvExits float64
	var dDeliv [numKinds]uint64
	var dDelivSum uint64
	for i := range cur.exits {
		var sendExits float64
		for _, c := range ipiSend {
			sendExits += float64(delta(cur.classes[i][c], prev.classes[i][c]))
		}
		var dSent [numKinds]uint64
		var dSentSum uint64
		for k := range numKinds {
			dSent[k] = delta(cur.sent[i][k], prev.sent[i][k])
			dSentSum += dSent[k]
			d := delta(cur.delivered[i][k], prev.delivered[i][k])
			dDeliv[k] += d
			dDelivSum += d
		}
		if dSentSum == 0 {
			a.unattributedSender += sendExits
		} else {
			for k := range numKinds {
				a.sender[k] += sendExits * float64(dSent[k]) / float64(dSentSum)
			}
		}
		for _, c := range []class{classEOI, classKick, classHLT} {
			recvExits += float64(delta(cur.classes[i][c], prev.classes[i][c]))
		}
	}
	if dDelivSum == 0 {
		a.unattributedReceiver += recvExits
	} else {
		for k := range numKinds {
			a.receiver[k] += recvExits * float64(dDeliv[k]) / float64(dDelivSum)
		}
	}
	a.sent = cur.totalKinds(cur.sent)
	a.delivered = cur.totalKinds(cur.delivered)
}

// IPICost is the exits one IPI of a destination kind costs (see above).
type IPICost struct {
	Kind                     string  `json:"kind"`
	Sent                     uint64  `json:"sent"`
	Delivered                uint64  `json:"delivered"`
	DeliveriesPerIPI         float64 `json:"deliveries_per_ipi"`
	SenderExitsPerIPI        float64 `json:"sender_exits_per_ipi"`
	ReceiverExitsPerDelivery float64 `json:"receiver_exits_per_delivery"`
	ExitsPerIPI              float64 `json:"exits_per_ipi"`
	// ReceiverExitsCaused are the receivers' exits the IPIs of this kind
	// caused, each charged to its IPI by the IPI's trace (HLT
	// wake, kick, window, EOI: accounting.VCPU.IPIRecvExits), exact
	// rather than shared out per interval; per delivery below. Both are
	// live counts (read at the request), not up to the last sample.
	ReceiverExitsCaused    uint64  `json:"receiver_exits_caused"`
	CausedExitsPerDelivery float64 `json:"receiver_exits_caused_per_delivery"`
}

// withCaused fills in each kind's exactly charged receiver exits from the
// report's live totals (by kind name): the exits and the deliveries of
// the same instant.
func withCaused(costs []IPICost, live accounting.CPUReport) []IPICost {
	for i := range costs {
		c := &costs[i]
		c.ReceiverExitsCaused = live.IPIRecvExits[c.Kind]
		if d := live.IPIDelivered[c.Kind]; d > 0 {
			c.CausedExitsPerDelivery = float64(c.ReceiverExitsCaused) / float64(d)
		}
	}
	return costs
}

// costs lists the kinds sent so far, in accounting.IPIKind order.
func (a *ipiAttrib) costs() []IPICost {
	out := []IPICost{}
	for k := range numKinds {
		if a.sent[k] == 0 {
			continue
		}
		sent, deliv := float64(a.sent[k]), float64(a.delivered[k])
		c := IPICost{Kind: accounting.IPIKind(k).String(), Sent: a.sent[k], Delivered: a.delivered[k],
			DeliveriesPerIPI: deliv / sent, SenderExitsPerIPI: a.sender[k] / sent,
			ExitsPerIPI: (a.sender[k] + a.receiver[k]) / sent}
		if deliv > 0 {
			c.ReceiverExitsPerDelivery = a.receiver[k] / deliv
		}
		out = append(out, c)
	}
	return out
}
