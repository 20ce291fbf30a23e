package vcpu

import (
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// loopFile says whether a file holds the loop's code (loop.go): the
// loop*.go files and kick.go, named to sort together.
func loopFile(path string) bool {
	f := filepath.Base(path)
	return f == "kick.go" || strings.HasPrefix(f, "loop") && !strings.HasSuffix(f, "_test.go")
}

// TestLoopCodeLayout: the functions an exit and an IPI's round trip run
// are in the loop's files, and those files' code is one run of the
// package's text, no other function of the package between (Go lays out
// a package's functions in the order of its files): each page the VMM
// touches between two entries costs an exit in the nested AMD-V host
// (loop.go). It reads the test binary's own symbols.
func TestLoopCodeLayout(t *testing.T) {
	hot := map[string]any{
		"Run": (*VCPU).Run, "run": (*VCPU).run, "afterRun": (*VCPU).afterRun,
		"enterGuestState": (*VCPU).enterGuestState, "handleExit": (*VCPU).handleExit,
		"handleBusExit": (*VCPU).handleBusExit, "handleIO": (*VCPU).handleIO,
		"handleMMIO": (*VCPU).handleMMIO, "x2apic": (*VCPU).x2apic, "settledEOI": (*VCPU).settledEOI,
		"prepareEntry": (*VCPU).prepareEntry, "enter": (*VCPU).enter, "injectFixed": (*VCPU).injectFixed,
		"countKick": (*VCPU).countKick, "Notify": (*VCPU).Notify, "halt": (*VCPU).halt,
		"waitWake": (*VCPU).waitWake, "pollWake": (*VCPU).pollWake, "syncTimerTo": (*VCPU).syncTimerTo,
		"yieldIfTime": (*VCPU).yieldIfTime, "tsc": (*VCPU).tsc, "hwRunRaw": (*VCPU).hwRunRaw,
		"hwIO": (*VCPU).hwIO, "hwSetImmediateExit": (*VCPU).hwSetImmediateExit, "hwInterrupt": (*VCPU).hwInterrupt,
	}
	for name, f := range hot {
		fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer())
		if fn == nil {
			t.Fatalf("%s: no function at its address", name)
		}
		if file, _ := fn.FileLine(fn.Entry()); !loopFile(file) {
			t.Errorf("%s is in %s, not in one of the loop's files", name, filepath.Base(file))
		}
	}

	// Every function from the lowest of them to the end of the highest,
	// found by address (FuncForPC: go test strips the symbol table).
	lo, hi := ^uintptr(0), uintptr(0)
	for _, f := range hot {
		pc := reflect.ValueOf(f).Pointer()
		lo, hi = min(lo, pc), max(hi, pc)
	}
	var names []string
	endEntry := runtime.FuncForPC(hi).Entry()
	for pc, last := lo, uintptr(0); ; pc++ {
		// FuncForPC names the innermost function inlined at pc, with
		// the entry of the one it is inlined into: functions are told
		// apart by entry, and named at it.
		f := runtime.FuncForPC(pc)
		if f == nil || f.Entry() == last {
			continue
		}
		if pc > hi && f.Entry() != endEntry {
			break
		}
		last = f.Entry()
		outer := runtime.FuncForPC(last)
		if file, _ := outer.FileLine(last); !loopFile(file) {
			t.Errorf("%s (%s) lies among the loop's functions", outer.Name(), filepath.Base(file))
		}
		names = append(names, outer.Name())
	}
	t.Logf("the loop's code: %d functions in %d bytes from %s", len(names), hi-lo, names[0])
}
