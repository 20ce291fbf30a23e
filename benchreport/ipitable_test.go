package benchreport

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

func ipiSample() *IPITable {
	row := func(mode, del, kind string, dests int, ipis, deliv, sx, rx uint64, smin, rmin float64) IPIRow {
		return IPIRow{Mode: mode, GuestMode: mode, Delivery: del, Kind: kind, Dests: dests, First: 1, CPUs: 65,
			IPIs: ipis, Sends: ipis, Deliveries: deliv, SenderExit: sx, RecvExit: rx, SenderMin: smin, RecvMin: rmin}
	}
	// Out of order on purpose: the table sorts unicast first, dests up.
	m16 := row("x2apic-cluster", "plain", "multicast", 16, 2, 32, 4, 64, 1, 2)
	m16.SenderWhy = "APIC IDs 1..16 touch 2 clusters"
	m16.Sends = 4
	m16.RecvHLT, m16.RecvEOI, m16.RecvWakeups = 32, 31, 31
	m16.RecvKick, m16.GuestIRQs, m16.GuestHLTs, m16.GuestWakes, m16.GuestEOIs, m16.GuestPVEOIs = 1, 32, 30, 29, 28, 4
	irq := row("x2apic-cluster", "avic", "unicast", 1, 128, 128, 128, 130, 1, 1)
	irq.RecvWhy = "receivers' exits per delivery: hlt 1, irq_window 0.02"
	skip := IPIRow{Mode: "xapic-cluster", GuestMode: "xapic-cluster", Delivery: "plain", Kind: "multicast", Dests: 64,
		CPUs: 65, Skipped: "59 APs to address"}
	return &IPITable{Emulating: true, Note: "made by a test", Rows: []IPIRow{
		m16,
		row("x2apic-cluster", "plain", "multicast", 1, 2, 2, 2, 4, 1, 2),
		row("x2apic-cluster", "plain", "unicast", 1, 128, 128, 128, 256, 1, 2),
		irq,
		row("xapic-cluster", "plain", "unicast", 1, 118, 118, 354, 236, 3, 2),
		skip,
	}}
}

func TestIPIMatrix(t *testing.T) {
	var b bytes.Buffer
	ipiSample().WriteMatrix(&b)
	got := b.String()
	want := `| mode | delivery | unicast | multicast 1 | multicast 16 | multicast 64 |
|---|---|---:|---:|---:|---:|
| x2apic-cluster | plain | 1 / 2 | 1 / 2 | 2 [1] / 2 |  |
| x2apic-cluster | avic | 1 / 1.02 [2] |  |  |  |
| xapic-cluster | plain | 3 / 2 |  |  | n/a [3] |

[1] APIC IDs 1..16 touch 2 clusters  
[2] receivers' exits per delivery: hlt 1, irq_window 0.02  
[3] 59 APs to address  
`
	if got != want {
		t.Errorf("matrix:\n%s\nwant:\n%s", got, want)
	}
}

func TestIPIMarkdownAndCSV(t *testing.T) {
	tab := ipiSample()
	var md bytes.Buffer
	tab.WriteMarkdown(&md)
	s := md.String()
	for _, want := range []string{"# govmm bench-ipi", "exit counts are exact", "made by a test", "| multicast 16 |",
		"| x2apic-cluster | plain | multicast | 16 | 65 | 2 | 2 | 32 | 2 | 1 | 2 | 2 | 32 | sender: APIC IDs 1..16 touch 2 clusters |",
		"| xapic-cluster | plain | multicast | 64 | 65 | | | | | | | | | not measured: 59 APs to address |"} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	if i, j := strings.Index(s, "| x2apic-cluster | plain | unicast |"), strings.Index(s, "| x2apic-cluster | plain | multicast | 1 |"); i < 0 || j < i {
		t.Error("every-case table: unicast does not come before multicast")
	}

	var c bytes.Buffer
	if err := tab.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 {
		t.Fatalf("%d CSV records, want a header and 6 rows", len(recs))
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// recs[1..3]: x2apic-cluster plain unicast, multicast 1, multicast 16.
	r := recs[3]
	for k, want := range map[string]string{"mode": "x2apic-cluster", "kind": "multicast", "dests": "16", "first_apic_id": "1", "sends": "4",
		"sender_exits_per_ipi": "2.000", "sender_min": "1.000", "receiver_exits_per_delivery": "2.000",
		"receiver_exits_per_ipi": "32.000", "sender_above_min_because": "APIC IDs 1..16 touch 2 clusters",
		"receiver_above_min_because": "", "receiver_hlt_exits": "32", "receiver_eoi_exits": "31", "receiver_kicks": "1",
		"receiver_wakeups": "31", "guest_irqs": "32", "guest_hlts": "30", "guest_wakes": "29", "guest_eois": "28", "guest_pv_eois": "4"} {
		if r[col[k]] != want {
			t.Errorf("CSV %s = %q, want %q (%v)", k, r[col[k]], want, r)
		}
	}
	if recs[1][col["kind"]] != "unicast" || recs[6][col["skipped"]] != "59 APs to address" {
		t.Errorf("CSV order or skip: %v", recs)
	}
}

func TestIPINum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1: "1", 1.5: "1.5", 2.0234: "2.02", 12: "12", 0.001: "0"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
