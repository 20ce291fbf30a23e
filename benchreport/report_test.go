package benchreport

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"strings"
	"testing"
)

func sample() *Report {
	return &Report{Emulating: true, Rows: []Row{
		{Mode: "physical", CPUs: 4, Section: 2, Kind: "call-function", Ops: 10, SenderExit: 4, RecvExit: 6, ICRPerOp: 3, Cycles: 1000},
		{Mode: "cluster", CPUs: 2, Section: 2, Kind: "call-function", Ops: 10, SenderExit: 2, RecvExit: 2, ICRPerOp: 1, Cycles: 500},
		{Mode: "cluster", CPUs: 4, Section: 2, Kind: "call-function", Ops: 10, SenderExit: 2, RecvExit: 6, ICRPerOp: 1, Cycles: 700},
		{Mode: "cluster", CPUs: 2, Section: 1, Kind: "unicast", Ops: 10, SenderExit: 2, RecvExit: 2, ICRPerOp: 1, Cycles: 400},
	}}
}

func TestMarkdownAndCSV(t *testing.T) {
	rep := sample()
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	s := md.String()
	for _, want := range []string{"exit counts are exact", "## Section 1: unicast", "## Section 2: call-function",
		"| cluster | 4 | 10 | 8.00 | 2.00 | 1.00 | 6.00 | 700 |"} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "Section 1") > strings.Index(s, "Section 2") {
		t.Error("sections out of order")
	}
	var c bytes.Buffer
	if err := rep.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil || len(recs) != 5 || recs[1][0] != "cluster" || recs[1][5] != "4.000" {
		t.Fatalf("csv %v %v", recs, err)
	}
}

func TestSVG(t *testing.T) {
	var b bytes.Buffer
	sample().WriteSVG(&b, 2, "exits per call-function", Row.Total)
	var doc struct {
		XMLName  xml.Name
		Polyline []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if doc.XMLName.Local != "svg" || len(doc.Polyline) != 2 {
		t.Fatalf("want an svg with 2 lines (two modes), got %s with %d", doc.XMLName.Local, len(doc.Polyline))
	}
	if n := len(strings.Fields(doc.Polyline[0].Points)); n != 2 {
		t.Errorf("cluster line has %d points, want 2", n)
	}
}
