package benchreport

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
)

// svgTexts reads svg to its end as XML and returns the contents of its
// <text> elements: the labels a reader sees.
func svgTexts(t *testing.T, svg []byte) []string {
	t.Helper()
	var texts []string
	inText := false
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	if len(texts) == 0 {
		t.Fatalf("SVG has no text:\n%s", svg)
	}
	return texts
}

func count(texts []string, s string) int {
	n := 0
	for _, t := range texts {
		if t == s {
			n++
		}
	}
	return n
}

// thousands matches a whole number with at least two thousands separators.
var thousands = regexp.MustCompile(`^\d{1,3}(,\d{3}){2,}$`)

// checkLargeTicks fails unless some label is a number like 150,000,000 and
// none is in exponent notation.
func checkLargeTicks(t *testing.T, texts []string) {
	t.Helper()
	found := false
	for _, s := range texts {
		found = found || thousands.MatchString(s)
		if strings.Contains(s, "e+") {
			t.Errorf("tick label %q is in exponent notation", s)
		}
	}
	if !found {
		t.Errorf("no tick label like 155,567,602 in %q", texts)
	}
}

func TestTickLabel(t *testing.T) {
	for v, want := range map[float64]string{
		155567602: "155,567,602", 2.02: "2.02", 1500: "1,500", 1000: "1,000", 999: "999",
		999.996: "1,000", 2.5: "2.5", 3: "3", 0: "0", 1234.6: "1,235", -1500: "-1,500",
	} {
		if got := tickLabel(v); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", v, got, want)
		}
	}
	if got := groupThousands(155567600.25, 2); got != "155,567,600.25" {
		t.Errorf("groupThousands(155567600.25, 2) = %q", got)
	}
	if got := groupThousands(-0.0001, 2); got != "0.00" {
		t.Errorf("groupThousands(-0.0001, 2) = %q, want no minus sign on zero", got)
	}
}

func TestReadableTicks(t *testing.T) {
	var labels []string
	for _, tk := range (readableTicks{}).Ticks(0, 155567602) {
		if !tk.IsMinor() {
			labels = append(labels, tk.Label)
		}
	}
	checkLargeTicks(t, labels)
	// Closer than tickLabel's precision: the labels must still differ.
	for _, r := range [][2]float64{{1.0001, 1.0004}, {155567600, 155567601}} {
		seen := map[string]bool{}
		for _, tk := range (readableTicks{}).Ticks(r[0], r[1]) {
			if tk.IsMinor() {
				continue
			}
			if seen[tk.Label] {
				t.Errorf("ticks from %v to %v: label %q repeats", r[0], r[1], tk.Label)
			}
			seen[tk.Label] = true
		}
	}
}

func TestSVGCycles(t *testing.T) {
	rep := sample()
	rep.Rows[1].Cycles, rep.Rows[2].Cycles = 155567602, 12000000
	var b bytes.Buffer
	if err := rep.WriteSVG(&b, 2, "guest cycles", "cycles per operation", func(r Row) float64 { return r.Cycles }); err != nil {
		t.Fatal(err)
	}
	checkLargeTicks(t, svgTexts(t, b.Bytes()))
}

func TestSVGOneCPUCountIsBarChart(t *testing.T) {
	rep := &Report{Rows: []Row{
		{Mode: "physical", CPUs: 4, Section: 1, Kind: "unicast", SenderExit: 2, RecvExit: 0.02},
		{Mode: "cluster", CPUs: 4, Section: 1, Kind: "unicast", SenderExit: 3},
		{Mode: "pv-ipi", CPUs: 4, Section: 1, Kind: "unicast", SenderExit: 1},
	}}
	var b bytes.Buffer
	if err := rep.WriteSVG(&b, 1, "exits per unicast", "exits per operation", Row.Total); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, b.Bytes())
	if count(texts, "mode (4 vCPUs)") != 1 {
		t.Errorf("x axis is not labelled with the modes at 4 vCPUs: %q", texts)
	}
	// Each mode names its bar on the x axis, once: there is no legend.
	for _, m := range []string{"physical", "cluster", "pv-ipi"} {
		if n := count(texts, m); n != 1 {
			t.Errorf("mode %q appears %d times, want once as its bar's label", m, n)
		}
	}
	if count(texts, "vCPUs") != 0 {
		t.Error("bar chart has a vCPU axis")
	}
}

func TestDistributionSVG(t *testing.T) {
	groups := []Samples{
		{Name: "cluster", Values: []float64{150e6, 152e6, 155567602, 149e6, 160e6}},
		{Name: "pv-ipi", Values: []float64{90e6, 95e6, 91e6}},
		{Name: "physical", Values: []float64{120e6}}, // one sample still draws
	}
	var b bytes.Buffer
	if err := WriteDistributionSVG(&b, "cycles per IPI", "cycles", groups, "exits per IPI", []float64{2.02, 1, 3}); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, b.Bytes())
	for _, want := range []string{"cycles per IPI", "cycles", "exits per IPI", "2"} {
		if count(texts, want) == 0 {
			t.Errorf("SVG lacks the text %q; it has %q", want, texts)
		}
	}
	for _, g := range groups {
		if n := count(texts, g.Name); n != 2 {
			t.Errorf("group %q is named %d times, want 2 (once per panel)", g.Name, n)
		}
	}
	checkLargeTicks(t, texts)

	b.Reset()
	if err := WriteDistributionSVG(&b, "cycles per IPI", "cycles", groups[:2], "exits per IPI", nil); err != nil {
		t.Fatal(err)
	}
	if texts := svgTexts(t, b.Bytes()); count(texts, "exits per IPI") != 0 || count(texts, "cluster") != 1 {
		t.Errorf("without exits the SVG should have one panel: %q", texts)
	}

	// Every group a single, equal sample: an empty value range.
	b.Reset()
	same := []Samples{{Name: "a", Values: []float64{7}}, {Name: "b", Values: []float64{7}}}
	if err := WriteDistributionSVG(&b, "t", "y", same, "exits", []float64{0, 0}); err != nil {
		t.Fatal(err)
	}
	svgTexts(t, b.Bytes())
}

func TestDistributionSVGErrors(t *testing.T) {
	ok := Samples{Name: "cluster", Values: []float64{1, 2}}
	for name, c := range map[string]struct {
		groups []Samples
		exits  []float64
		want   string
	}{
		"empty group":    {[]Samples{ok, {Name: "pv-ipi"}}, nil, `"pv-ipi" has no samples`},
		"no groups":      {nil, nil, "no groups"},
		"exits mismatch": {[]Samples{ok}, []float64{1, 2}, "2 exit values for 1 groups"},
	} {
		err := WriteDistributionSVG(io.Discard, "t", "y", c.groups, "exits", c.exits)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, c.want)
		}
	}
}
