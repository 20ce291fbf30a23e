package vcpu

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/govmm/govmm/"

// TestMechanismImportsNoMeasurement: the interrupt path (the vCPU loop,
// the exit bus, the LAPIC and everything they import from this module)
// reaches no measurement package. What it counts leaves it through
// Counters and vlapic.Observer, which accounting implements.
func TestMechanismImportsNoMeasurement(t *testing.T) {
	measurement := map[string]bool{"accounting": true, "dashboard": true, "benchreport": true}
	seen := map[string][]string{} // package -> the chain that reached it
	var walk func(pkg string, chain []string)
	walk = func(pkg string, chain []string) {
		if _, ok := seen[pkg]; ok {
			return
		}
		chain = append(append([]string(nil), chain...), pkg)
		seen[pkg] = chain
		for _, imp := range moduleImports(t, pkg) {
			walk(imp, chain)
		}
	}
	for _, root := range []string{"vcpu", "exitbus", "vlapic"} {
		walk(root, nil)
	}
	var bad []string
	for pkg, chain := range seen {
		if measurement[pkg] {
			bad = append(bad, strings.Join(chain, " -> "))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("the interrupt path imports measurement: %s", b)
	}
	if len(seen) < 4 {
		t.Fatalf("walked only %v: the walk found no imports", seen)
	}
}

// moduleImports lists the module's packages that pkg's non-test files
// import, as directories relative to the module's root.
func moduleImports(t *testing.T, pkg string) []string {
	t.Helper()
	dir := filepath.Join("..", filepath.FromSlash(pkg))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: no Go files in %s (%v)", pkg, dir, err)
	}
	set := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range af.Imports {
			if p := strings.Trim(is.Path.Value, `"`); strings.HasPrefix(p, module) {
				set[strings.TrimPrefix(p, module)] = true
			}
		}
	}
	var out []string
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
