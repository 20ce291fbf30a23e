package benchreport

import (
	"bytes"
	"encoding/csv"
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
	if err := sample().WriteSVG(&b, 2, "exits per call-function", "exits per operation", Row.Total); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, b.Bytes())
	for _, want := range []string{"exits per call-function", "exits per operation", "vCPUs", "2", "4", "cluster", "physical"} {
		if count(texts, want) == 0 {
			t.Errorf("SVG lacks the text %q; it has %q", want, texts)
		}
	}
	if strings.Count(b.String(), "<path") < 2 {
		t.Error("SVG has fewer paths than modes' lines")
	}
	if err := sample().WriteSVG(&b, 4, "no such section", "", Row.Total); err == nil {
		t.Error("a section without rows plotted without error")
	}
}
