//go:build ignore

// funclen lists the longest Go functions of a tree, longest first, with
// their lines from "func" to the closing brace: what issue 14 keeps under
// about 60. Usage: go run scripts/funclen.go [-n 10] [-tests] [DIR]
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
