package seedstat

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The known input: the figures of Xen's mixed-mode post (mixed 25 samples,
// physical 12, cluster 11, in ns), whose ministat output it quotes.
var (
	postMixed   = Summary{N: 25, Min: 3.5131328e+08, Max: 3.5716441e+08, Median: 3.5410987e+08, Avg: 3.5432659e+08, Stddev: 1566737.4}
	postPhys    = Summary{N: 12, Min: 1.231082e+09, Max: 1.238824e+09, Median: 1.2370528e+09, Avg: 1.2357981e+09, Stddev: 2853892.9}
	postCluster = Summary{N: 11, Min: 3.5099276e+08, Max: 3.5561459e+08, Median: 3.5461234e+08, Avg: 3.5415668e+08, Stddev: 1415071.9}
)

func near(got, want, rel float64) bool { return math.Abs(got-want) <= math.Abs(want)*rel }

func TestCompareReproducesThePost(t *testing.T) {
	d, err := Compare(postMixed, postPhys, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	// "8.81472e+08 +/- 1.46849e+06 / 248.774% +/- 0.96566% / pooled s = 2.05985e+06".
	// ministat's t-table has three decimals (2.030 for 35 degrees of
	// freedom), gonum's quantile is exact (2.03011): the half-widths agree
	// to 1 part in 10^4, the rest to the post's six digits.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"difference", d.Diff, 8.81472e+08}, {"half-width", d.Err, 1.46849e+06},
		{"percent", d.Pct, 248.774}, {"percent half-width", d.PctErr, 0.96566}, {"pooled s", d.PooledS, 2.05985e+06}} {
		tol := 1e-5
		if strings.Contains(c.name, "half-width") {
			tol = 1e-4
		}
		if !near(c.got, c.want, tol) {
			t.Errorf("%s = %.6g, the post says %.6g", c.name, c.got, c.want)
		}
	}
	if !d.Proven {
		t.Error("physical against mixed: no difference proven, the post proves one")
	}
	if d, _ := Compare(postMixed, postCluster, 0.95); d.Proven {
		t.Errorf("cluster against mixed: difference %v +/- %v proven, the post proves none", d.Diff, d.Err)
	}
	// Student's t for 35 degrees of freedom at 95%, two-sided: 2.0301.
	if !near(d.T, 2.0301, 1e-4) {
		t.Errorf("t = %v, want 2.0301", d.T)
	}
}

func TestSummarize(t *testing.T) {
	s, err := Summarize([]float64{5, 1, 3, 2})
	if err != nil {
		t.Fatal(err)
	}
	// mean 2.75, sample variance (5.0625+3.0625+0.0625+0.5625)/3
	want := Summary{N: 4, Min: 1, Max: 5, Median: 2.5, Avg: 2.75, Stddev: math.Sqrt(8.75 / 3)}
	if s.N != want.N || s.Min != want.Min || s.Max != want.Max || s.Median != want.Median ||
		!near(s.Avg, want.Avg, 1e-12) || !near(s.Stddev, want.Stddev, 1e-12) {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if s, _ := Summarize([]float64{7}); s.Stddev != 0 || s.Median != 7 {
		t.Errorf("one sample: %+v", s)
	}
	if _, err := Summarize(nil); err == nil {
		t.Error("no samples: no error")
	}
	if _, err := Compare(Summary{N: 1}, Summary{N: 1}, 0.95); err == nil {
		t.Error("1 and 1 samples compared: want an error (no degrees of freedom)")
	}
}

func TestWriteMinistat(t *testing.T) {
	var b bytes.Buffer
	base := []float64{10, 11, 9, 10, 10}
	slower := []float64{20, 21, 19, 20, 20}
	same := []float64{10, 9, 11, 10, 10}
	if err := WriteMinistat(&b, []Set{{"mixed", base}, {"phys", slower}, {"cluster", same}}, 0.95); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"x mixed\n", "+ phys\n", "* cluster\n",
		"    N           Min           Max        Median           Avg        Stddev\n",
		"x   5             9            11            10            10    0.70710678\n",
		"Difference at 95.0% confidence\n\t10 +/- ", "\t100% +/- ", "(Student's t, pooled s = 0.707107)",
		"No difference proven at 95.0% confidence\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if err := WriteMinistat(&b, []Set{{"a", nil}}, 0.95); err == nil {
		t.Error("an empty set: no error")
	}
}
