package vcpu

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ipiPathRow is a numbered row of docs/ipi-path.md's "Now" table:
// | N | `function` (note) | file | package |
var ipiPathRow = regexp.MustCompile("^\\| \\d+ \\| `([^`]+)`[^|]*\\| ([^ |]+) \\| ([^ |]+) \\|$")

// ipiPathThrough is an observer row's helper: (through `f`, file)
var ipiPathThrough = regexp.MustCompile("through `([^`]+)`, ([a-z0-9_/]+\\.go)")

// TestIPIPathDoc: every function docs/ipi-path.md's walk of an IPI names
// ("Now") is declared in the file it names, in the package it names, so
// the walk cannot go stale as the code moves.
func TestIPIPathDoc(t *testing.T) {
	root := filepath.Join("..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "ipi-path.md"))
	if err != nil {
		t.Fatal(err)
	}
	now, _, ok := strings.Cut(string(b), "\n## Before")
	if !ok {
		t.Fatal(`docs/ipi-path.md has no "## Before" section after "## Now"`)
	}
	_, now, _ = strings.Cut(now, "\n## Now")
	checked := 0
	for _, line := range strings.Split(now, "\n") {
		if m := ipiPathRow.FindStringSubmatch(line); m != nil {
			if pkg := strings.Split(m[2], "/")[0]; pkg != m[3] {
				t.Errorf("%q: file %s is not in package %s", line, m[2], m[3])
			}
			checkDeclared(t, root, m[1], m[2])
			checked++
		}
		for _, m := range ipiPathThrough.FindAllStringSubmatch(line, -1) {
			checkDeclared(t, root, m[1], m[2])
			checked++
		}
	}
	if checked < 28 {
		t.Errorf("checked %d functions of the walk, want its 28 or more (has the table's layout changed?)", checked)
	}
}

// checkDeclared fails t unless file declares fn: "Name", "(*T).Name" or
// "T.Name".
func checkDeclared(t *testing.T, root, fn, file string) {
	t.Helper()
	recv, name := "", fn
	if i := strings.LastIndex(fn, "."); i >= 0 {
		recv, name = strings.Trim(fn[:i], "()*"), fn[i+1:]
	}
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Errorf("%s (for %s): %v", file, fn, err)
		return
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name {
			continue
		}
		if recvName(fd) == recv {
			return
		}
	}
	t.Errorf("docs/ipi-path.md: %s is not declared in %s", fn, file)
}

// recvName is a method's receiver type name ("" for a function).
func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	x := fd.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
