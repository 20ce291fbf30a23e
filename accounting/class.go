package accounting

import "github.com/govmm/govmm/exitcause"

// ClassOf is the class of the cause a report names; exitcause.ClassOther for a name
// that is no cause.
func ClassOf(name string) exitcause.Class {
	if c, ok := exitcause.Parse(name); ok {
		return c.Class()
	}
	return exitcause.ClassOther
}

// ByClass sums the report's exits by class.
func (r CPUReport) ByClass() [exitcause.NumClasses]uint64 {
	var out [exitcause.NumClasses]uint64
	for name, n := range r.ByCause {
		out[ClassOf(name)] += n
	}
	return out
}
