package accounting

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/govmm/govmm/exitcause"
)

// IPIExits is what a run's IPIs cost in exits: the sender's (every exit
// of a class on the sending side: ICR and ICR2, SELF_IPI, the PV send-IPI)
// per IPI sent, and the receivers' (the HLT exit an IPI woke, the kick or
// interrupt window it made, the EOI that ended it) per delivery, in all and
// by destination kind. With the latency histograms beside it, it says what
// an IPI costs in a whole run, a Linux boot included, where no section
// isolates one.
type IPIExits struct {
	Sends, Deliveries, SenderExits, ReceiverExits uint64
	// ByKind: the receivers' side per destination kind (the sender's
	// exits are not split by kind: an xAPIC ICR read precedes the kind).
	ByKind []IPIKindExits
}

// IPIKindExits is one destination kind's share of IPIExits.
type IPIKindExits struct {
	Kind                             string
	Sends, Deliveries, ReceiverExits uint64
}

// IPIExits sums r's IPIs and the exits they caused.
func (r CPUReport) IPIExits() IPIExits {
	var e IPIExits
	for c, n := range r.ByClass() {
		if exitcause.Class(c).IPISend() {
			e.SenderExits += n
		}
	}
	for k, sends := range r.IPISent {
		ke := IPIKindExits{Kind: k, Sends: sends, Deliveries: r.IPIDelivered[k], ReceiverExits: r.IPIRecvExits[k]}
		e.Sends, e.Deliveries, e.ReceiverExits = e.Sends+ke.Sends, e.Deliveries+ke.Deliveries, e.ReceiverExits+ke.ReceiverExits
		e.ByKind = append(e.ByKind, ke)
	}
	sort.Slice(e.ByKind, func(i, j int) bool { return e.ByKind[i].Kind < e.ByKind[j].Kind })
	return e
}

// per formats n/d to two decimals ("-" when d is 0).
func per(n, d uint64) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(d))
}

// writeIPIExits prints e as a table, nothing when no IPI was sent.
func writeIPIExits(w io.Writer, e IPIExits) {
	if e.Sends == 0 {
		return
	}
	fmt.Fprintf(w, "\nexits per IPI: senders %d exits for %d sends (%s per send); receivers, by destination kind:\n",
		e.SenderExits, e.Sends, per(e.SenderExits, e.Sends))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  kind\tsends\tdeliveries\treceiver exits\tper delivery\t")
	for _, k := range e.ByKind {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\t\n", k.Kind, k.Sends, k.Deliveries, k.ReceiverExits, per(k.ReceiverExits, k.Deliveries))
	}
	fmt.Fprintf(tw, "  all\t%d\t%d\t%d\t%s\t\n", e.Sends, e.Deliveries, e.ReceiverExits, per(e.ReceiverExits, e.Deliveries))
	tw.Flush()
}
