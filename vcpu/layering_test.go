package vcpu

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/govmm/govmm/"

// measurementPkgs observe the interrupt path; nothing on it may import them.
var measurementPkgs = map[string]bool{"accounting": true, "dashboard": true, "benchreport": true, "seedstat": true}

// assemblyPkgs put a VM together and drive it, measurement included: the
// only packages that may import the measurement ones. vmm is among them
// because it assembles the VM (it adapts accounting to the mechanism's
// observer interfaces); no hop of an IPI or of a device interrupt is in it
// (docs/ipi-path.md): the LAPICs' registration and the platform's
// interrupts are package routing's.
var assemblyPkgs = map[string]bool{"vmm": true, "linuxguest": true, "cmd/govmm": true, "tests": true,
	"scripts/testsummary": true, "ipicost": true}

// TestMechanismImportsNoMeasurement: every package of the module but the
// measurement and assembly ones (above) reaches no measurement package,
// through any chain of its imports: the vCPU loop, the exit bus, the
// LAPIC, the IOAPIC, the remapping unit, the PV units, PCI, virtio, the
// devices, the KVM binding and everything they import. What they count
// leaves them through interfaces (Counters, vlapic.Observer, pvipi's
// Observer, the marker's functions), which accounting implements.
func TestMechanismImportsNoMeasurement(t *testing.T) {
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
	roots := modulePackages(t)
	for _, root := range roots {
		if !measurementPkgs[root] && !assemblyPkgs[root] {
			walk(root, nil)
		}
	}
	var bad []string
	for pkg, chain := range seen {
		if measurementPkgs[pkg] {
			bad = append(bad, strings.Join(chain, " -> "))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("mechanism imports measurement: %s", b)
	}
	for _, want := range []string{"vcpu", "complete", "exitbus", "routing", "vlapic", "vioapic", "vintremap", "pvipi", "pveoi", "devices", "pci", "virtio/blk", "kvm"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("the walk did not start from or reach %s (found %d packages: %v)", want, len(roots), roots)
		}
	}
}

// modulePackages lists the module's packages (directories holding non-test
// Go files, testdata and hidden directories left out), relative to its root.
func modulePackages(t *testing.T) []string {
	t.Helper()
	var pkgs []string
	root := ".."
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			if rel = filepath.ToSlash(rel); len(pkgs) == 0 || pkgs[len(pkgs)-1] != rel {
				pkgs = append(pkgs, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs)
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
