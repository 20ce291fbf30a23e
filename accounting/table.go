package accounting

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Counter describes one counter of CPUCounters or PlatformCounters, as the
// tags of its field declare it. The report's JSON, its text table, the
// Prometheus exposition and the dashboard loop over CPUCounterTable and
// PlatformCounterTable rather than naming counters one by one.
type Counter struct {
	// Name is the counter's key in the report's JSON (the json tag).
	Name string
	// OmitZero: the JSON leaves the counter out while it is zero.
	OmitZero bool
	Help     string
	Kind     Kind
	Scope    Scope
	// Metric is the Prometheus family the counter is exported as; "" for
	// a counter exported otherwise (by its own code) or not at all.
	// Counters that share a family differ by Label.
	Metric string
	Label  MetricLabel
	// Scale is the metric's value per count (the scale tag): 1e-9 for a
	// counter of nanoseconds exported in seconds, Prometheus's base unit.
	Scale float64
	// Column heads the counter's column in the text report's per-vCPU
	// table; "" for none.
	Column string
	// Listed names the counter in one of the text report's lists: its
	// scope's list ("interrupts ended or taken back without an exit" for
	// a vCPU, "device interrupts" for the platform), or the list named by
	// Group; "" for not listed.
	Listed string
	// Group is the title of the list a Listed counter is in, when not its
	// scope's (the group tag; e.g. "halt polling").
	Group string

	field int // index of the field in its struct
}

// MetricLabel is a constant label of a counter in a shared family, such as
// dest_mode="physical"; the zero value is none.
type MetricLabel struct{ Name, Value string }

// Kind is what a counter's value is: a count that only grows, or a level.
type Kind uint8

const (
	KindCounter Kind = iota // the default (no kind tag)
	KindGauge               // kind:"gauge"
)

// Scope is what a counter is counted per.
type Scope uint8

const (
	PerVCPU Scope = iota // a CPUCounters field, labelled by cpu in metrics
	PerVM                // a PlatformCounters field
)

// CPUCounterTable and PlatformCounterTable list the counters in the order
// of their fields; read from the struct tags once, at start-up.
var (
	CPUCounterTable      = counterTable(reflect.TypeFor[CPUCounters[uint64]](), PerVCPU)
	PlatformCounterTable = counterTable(reflect.TypeFor[PlatformCounters[uint64]](), PerVM)
)

// counterTable reads the tags of t's fields. A field without a name or help
// is a mistake in the declaration, not a state to run in: it panics.
func counterTable(t reflect.Type, scope Scope) []Counter {
	out := make([]Counter, t.NumField())
	for i := range out {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		c := Counter{Name: name, OmitZero: opts == "omitempty", Help: f.Tag.Get("help"), Scope: scope,
			Metric: f.Tag.Get("metric"), Column: f.Tag.Get("column"), Listed: f.Tag.Get("listed"), Group: f.Tag.Get("group"), field: i}
		switch k := f.Tag.Get("kind"); k {
		case "", "counter":
		case "gauge":
			c.Kind = KindGauge
		default:
			panic(fmt.Sprintf("accounting: %s.%s: kind %q", t.Name(), f.Name, k))
		}
		c.Scale = 1
		if sc := f.Tag.Get("scale"); sc != "" {
			v, err := strconv.ParseFloat(sc, 64)
			if err != nil || v <= 0 {
				panic(fmt.Sprintf("accounting: %s.%s: scale %q", t.Name(), f.Name, sc))
			}
			c.Scale = v
		}
		if l := f.Tag.Get("label"); l != "" {
			n, v, ok := strings.Cut(l, "=")
			if !ok || c.Metric == "" {
				panic(fmt.Sprintf("accounting: %s.%s: label %q wants name=value and a metric", t.Name(), f.Name, l))
			}
			c.Label = MetricLabel{n, v}
		}
		if c.Name == "" || c.Help == "" {
			panic(fmt.Sprintf("accounting: %s.%s lacks a json name or help", t.Name(), f.Name))
		}
		out[i] = c
	}
	return out
}

// At is the counter k of c; k must be one of CPUCounterTable.
func (c *CPUCounters[T]) At(k Counter) *T {
	if k.Scope != PerVCPU {
		panic("accounting: " + k.Name + " is no vCPU counter")
	}
	return fieldAt[T](c, k.field)
}

// At is the counter k of c; k must be one of PlatformCounterTable.
func (c *PlatformCounters[T]) At(k Counter) *T {
	if k.Scope != PerVM {
		panic("accounting: " + k.Name + " is no platform counter")
	}
	return fieldAt[T](c, k.field)
}

// fieldAt is field i of the struct counts points to, every field of which
// is a T. Reflection, without allocating, off the exit path: the exit path
// increments the fields by name.
func fieldAt[T any](counts any, i int) *T {
	return reflect.ValueOf(counts).Elem().Field(i).Addr().Interface().(*T)
}
