//go:build ignore

// funclen lists the longest Go functions of a tree, longest first, with
// their lines from "func" to the closing brace. With -max N it is a check
// (make lint): every function longer than N lines must be listed in the
// -exceptions file ("NAME FILE: why", one per line, # comments) and every
// listed one must still be longer, so the list says why each long
// function stays long and shrinks when one is split.
// Usage: go run scripts/funclen.go [-n 10] [-tests] [-max N -exceptions FILE] [DIR]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type funcLen struct {
	name, pos string
	lines     int
}

func main() {
	n := flag.Int("n", 10, "how many functions to list")
	tests := flag.Bool("tests", false, "count _test.go files too")
	max := flag.Int("max", 0, "check: fail on functions longer than this not in -exceptions")
	exceptions := flag.String("exceptions", "", "with -max: the file of functions allowed to be longer, with why")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	var all []funcLen
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || (!*tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				name = "(" + types(fd.Recv.List[0].Type) + ")." + name
			}
			start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
			rel, _ := filepath.Rel(root, start.Filename)
			all = append(all, funcLen{name, fmt.Sprintf("%s:%d", rel, start.Line), end.Line - start.Line + 1})
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(1)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].lines > all[j].lines })
	if *max > 0 {
		if err := check(all, *max, *exceptions); err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(1)
		}
		return
	}
	for _, f := range all[:min(*n, len(all))] {
		fmt.Printf("%5d  %-40s %s\n", f.lines, f.name, f.pos)
	}
}

// types names a receiver type: T or *T.
func types(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + types(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return types(t.X)
	}
	return "?"
}

// check fails when a function over max lines is not an exception, or an
// exception is no longer over max (or no longer exists). An exception is
// keyed by name and file, not line, so edits above it do not stale it.
func check(all []funcLen, max int, path string) error {
	allowed := map[string]bool{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			key, why, ok := strings.Cut(line, ":")
			if f := strings.Fields(key); !ok || len(f) != 2 || strings.TrimSpace(why) == "" {
				return fmt.Errorf("%s:%d: want \"NAME FILE: why\", got %q", path, i+1, line)
			}
			allowed[strings.Join(strings.Fields(key), " ")] = false
		}
	}
	var bad []string
	for _, f := range all {
		if f.lines <= max {
			continue
		}
		key := f.name + " " + strings.Split(f.pos, ":")[0]
		if _, ok := allowed[key]; ok {
			allowed[key] = true
			continue
		}
		bad = append(bad, fmt.Sprintf("%s (%s) has %d lines: split it, or list it with why in %s", f.name, f.pos, f.lines, path))
	}
	for key, seen := range allowed {
		if !seen {
			bad = append(bad, fmt.Sprintf("%s is listed in %s but is not over %d lines (or is gone): take it off", key, path, max))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%d problems:\n  %s", len(bad), strings.Join(bad, "\n  "))
	}
	return nil
}
