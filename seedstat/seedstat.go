// Package seedstat is the statistics 'govmm bench-seeds' reports in the
// upstream posts' own shape: ministat's summary of each set of samples (N,
// min, max, median, average, standard deviation) and its comparison of two
// sets by Student's t at a confidence level, with a pooled standard
// deviation. The arithmetic is gonum's (stat, distuv); only ministat's
// layout is written here.
package seedstat

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Summary is ministat's line for one set of samples.
type Summary struct {
	N                             int
	Min, Max, Median, Avg, Stddev float64
}

// Summarize describes v. Stddev is the sample standard deviation (n-1 in
// the denominator), 0 for a single sample; Median is the middle value, or
// the mean of the two middle ones.
func Summarize(v []float64) (Summary, error) {
	if len(v) == 0 {
		return Summary{}, errors.New("no samples")
	}
	s := slices.Clone(v)
	slices.Sort(s)
	mean, variance := stat.MeanVariance(s, nil)
	sum := Summary{N: len(s), Min: s[0], Max: s[len(s)-1], Avg: mean}
	if len(s) > 1 {
		sum.Stddev = math.Sqrt(variance)
	}
	if n := len(s); n%2 == 1 {
		sum.Median = s[n/2]
	} else {
		sum.Median = (s[n/2-1] + s[n/2]) / 2
	}
	return sum, nil
}

// Difference is ministat's comparison of a set with the base set.
type Difference struct {
	Confidence float64 // e.g. 0.95
	// Proven: the difference of the means is larger than its confidence
	// interval's half-width (Err); otherwise ministat says "No difference
	// proven" and prints nothing else.
	Proven      bool
	Diff, Err   float64 // other's mean minus base's, and the half-width
	Pct, PctErr float64 // both relative to base's mean, in percent
	PooledS     float64 // the pooled standard deviation
	T           float64 // the two-sided Student's t quantile used
}

// Compare tests other against base as ministat does: the two-sample
// Student's t with pooled variance and n1+n2-2 degrees of freedom.
func Compare(base, other Summary, confidence float64) (Difference, error) {
	df := base.N + other.N - 2
	switch {
	case confidence <= 0 || confidence >= 1:
		return Difference{}, fmt.Errorf("confidence %v is not between 0 and 1", confidence)
	case base.N < 1 || other.N < 1 || df < 1:
		return Difference{}, fmt.Errorf("comparing needs at least 3 samples in the two sets, have %d and %d", base.N, other.N)
	}
	pooled := math.Sqrt((float64(base.N-1)*base.Stddev*base.Stddev + float64(other.N-1)*other.Stddev*other.Stddev) / float64(df))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - (1-confidence)/2)
	d := Difference{Confidence: confidence, PooledS: pooled, T: t,
		Diff: other.Avg - base.Avg,
		Err:  t * pooled * math.Sqrt(1/float64(base.N)+1/float64(other.N))}
	d.Proven = math.Abs(d.Diff) > d.Err
	if base.Avg != 0 {
		d.Pct, d.PctErr = d.Diff*100/base.Avg, relativeErr(base, other, t)*100/base.Avg
	}
	return d, nil
}

// relativeErr is ministat's half-width for the difference relative to the
// base's mean: the other set's variance enters as is, the base's scaled by
// the square of the ratio of the means (FreeBSD's ministat.c, Relative(),
// operator precedence included), so that the interval is of the ratio
// rather than of the difference. The post's "248.774% +/- 0.96566%" is this.
func relativeErr(base, other Summary, t float64) float64 {
	nb, no := float64(base.N), float64(other.N)
	re := (no-1)*other.Stddev*other.Stddev + (nb-1)*base.Stddev*base.Stddev*(other.Avg*other.Avg)/(base.Avg*base.Avg)
	re *= (no + nb) / (no * nb * (no + nb - 2))
	return t * math.Sqrt(re)
}

// Set is one named set of samples.
type Set struct {
	Name   string
	Values []float64
}

// symbols are ministat's markers, one per set.
const symbols = "x+*%#@O"

// WriteMinistat prints sets as ministat does: the legend, the table, and
// under every set after the first its comparison with the first.
func WriteMinistat(w io.Writer, sets []Set, confidence float64) error {
	if len(sets) == 0 {
		return errors.New("no sets")
	}
	if len(sets) > len(symbols) {
		return fmt.Errorf("ministat's layout has %d markers, not %d", len(symbols), len(sets))
	}
	sums := make([]Summary, len(sets))
	for i, s := range sets {
		var err error
		if sums[i], err = Summarize(s.Values); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		fmt.Fprintf(w, "%c %s\n", symbols[i], s.Name)
	}
	fmt.Fprintf(w, "    N           Min           Max        Median           Avg        Stddev\n")
	for i, s := range sums {
		fmt.Fprintf(w, "%c %3d %13.8g %13.8g %13.8g %13.8g %13.8g\n", symbols[i], s.N, s.Min, s.Max, s.Median, s.Avg, s.Stddev)
		if i == 0 {
			continue
		}
		d, err := Compare(sums[0], s, confidence)
		if err != nil {
			fmt.Fprintf(w, "Not compared: %v\n", err)
			continue
		}
		writeDifference(w, d)
	}
	return nil
}

func writeDifference(w io.Writer, d Difference) {
	if !d.Proven {
		fmt.Fprintf(w, "No difference proven at %.1f%% confidence\n", d.Confidence*100)
		return
	}
	fmt.Fprintf(w, "Difference at %.1f%% confidence\n", d.Confidence*100)
	fmt.Fprintf(w, "\t%.6g +/- %.6g\n", d.Diff, d.Err)
	fmt.Fprintf(w, "\t%.6g%% +/- %.6g%%\n", d.Pct, d.PctErr)
	fmt.Fprintf(w, "\t(Student's t, pooled s = %.6g)\n", d.PooledS)
}
