// Command testsummary is make test's reporter. It reads go test -json
// event streams (go test -json on the machine, test2json of the test
// binaries run inside the nested host) and prints them the way go test
// does without -v (a line per package, the whole output of each failing
// test), then one summary line over all runs: how many tests ran, where,
// how many skipped and why, how many failed.
//
//	testsummary filter [-tests] LOG   < events   (copies the events to LOG)
//	testsummary total [-nested-host NAME] MACHINE.json [NESTED.json...]
//
// filter -tests also prints each top-level test's result as it ends (the
// nested run is long). total exits 1 when a test or package failed, or
// when a test skipped for want of /dev/kvm on the machine did not run in
// the nested host: no test may be skipped without saying so.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one go test -json record (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testsummary filter [-tests] LOG | total [-nested-host NAME] MACHINE.json [NESTED.json]")
		os.Exit(2)
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "filter":
		code, err = filter(os.Args[2:])
	case "total":
		code, err = total(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q (filter or total)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

type key struct{ pkg, test string }

// collector holds each test's output until the event that ends it.
type collector map[key][]string

// take records e; for an event that ends a test or package (pass, skip,
// fail) it returns that one's output and forgets it.
func (c collector) take(e event) (lines []string, ended bool) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output":
		c[k] = append(c[k], e.Output)
	case "pass", "skip", "fail":
		lines = c[k]
		delete(c, k)
		return lines, true
	}
	return nil, false
}

// filter echoes a stream in go test's short form and saves it.
func filter(args []string) (int, error) {
	fs := flag.NewFlagSet("filter", flag.ContinueOnError)
	each := fs.Bool("tests", false, "print each top-level test's result as it ends")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return 0, fmt.Errorf("filter takes one LOG file")
	}
	log, err := os.OpenFile(fs.Arg(0), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	out := collector{}
	failed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil {
			fmt.Println(string(line)) // not an event: go test's own message (a build error)
			continue
		}
		log.Write(append(line, '\n'))
		if lines, ended := out.take(e); ended {
			if e.Action == "fail" {
				failed = true
				// Each failing test's own output, subtests' included
				// (go test -json gives a subtest's lines to it, not to
				// its parent, whose own lines come at its end).
				fmt.Print(strings.Join(lines, ""))
			}
			if e.Test == "" {
				if e.Action != "fail" {
					fmt.Printf("%-4s %s\t%.1fs\n", map[string]string{"pass": "ok", "skip": "ok"}[e.Action], e.Package, e.Elapsed)
				}
			} else if *each && !strings.Contains(e.Test, "/") && e.Action != "fail" {
				fmt.Printf("    --- %s: %s (%.1fs)\n", strings.ToUpper(e.Action), e.Test, e.Elapsed)
			}
		}
	}
	if failed {
		return 1, sc.Err()
	}
	return 0, sc.Err()
}

// result is a test's last word.
type result struct {
	action string // pass, fail, skip
	reason string // a skip's reason; a failure's first message lines
	nested bool   // ran inside the nested host
}

var parens = regexp.MustCompile(`\s*\([^()]*\)`)

// skipReason is the text after "SKIP:" in a skipped test's output, its
// parenthesised details dropped so that equal reasons group.
func skipReason(lines []string) string {
	for _, l := range lines {
		if i := strings.Index(l, "SKIP:"); i >= 0 {
			return strings.TrimSpace(parens.ReplaceAllString(l[i+5:], ""))
		}
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
			if i := strings.Index(l, ".go:"); i >= 0 {
				if j := strings.Index(l[i:], " "); j >= 0 {
					l = l[i+j+1:]
				}
			}
			return parens.ReplaceAllString(l, "")
		}
	}
	return "no reason given"
}

// failMessage is the start of a failed test's own message: up to three of
// its lines from the first t.Error or t.Fatal line ("file.go:N: ..."), and
// up to three later lines a guest printed as its verdict ("FAIL ..."), each
// cut to 160 characters. The summary repeats it after the FAILED line, so
// that the last lines of a long run say why (the whole output is above).
func failMessage(lines []string) string {
	var msg []string
	verdicts := 0
	for _, l := range lines {
		l = strings.TrimRight(l, "\n")
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "--- "):
			continue
		case len(msg) == 0 && !strings.Contains(l, ".go:"):
			continue
		case len(msg) >= 3 && !(strings.HasPrefix(t, "FAIL ") && verdicts < 3):
			continue
		case len(msg) >= 3:
			verdicts++
		}
		if len(l) > 160 {
			l = l[:160] + "..."
		}
		msg = append(msg, l)
	}
	return strings.Join(msg, "\n")
}

// read loads one run's results into res; nested runs override the
// machine's.
func read(path string, nested bool, res map[key]*result, pkgFail map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	out := collector{}
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var e event
		if err := dec.Decode(&e); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		lines, ended := out.take(e)
		switch {
		case !ended:
		case e.Test == "":
			if e.Action == "fail" {
				pkgFail[e.Package] = true
			}
		default:
			r := &result{action: e.Action, nested: nested}
			switch e.Action {
			case "skip":
				r.reason = skipReason(lines)
			case "fail":
				r.reason = failMessage(lines)
			}
			res[key{e.Package, e.Test}] = r
		}
	}
}

func total(args []string) (int, error) {
	fs := flag.NewFlagSet("total", flag.ContinueOnError)
	host := fs.String("nested-host", "the nested host", "what the nested run ran on")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 {
		return 0, fmt.Errorf("total takes MACHINE.json and, if guest tests ran nested, their NESTED.json files")
	}
	res := map[key]*result{}
	pkgFail := map[string]bool{}
	for i, p := range fs.Args() {
		if err := read(p, i > 0, res, pkgFail); err != nil {
			return 0, err
		}
	}
	var pass, passNested, fail int
	skips := map[string]int{}
	var failed, nowhere, why []string
	for k, r := range res {
		switch r.action {
		case "pass":
			pass++
			if r.nested {
				passNested++
			}
		case "fail":
			fail++
			failed = append(failed, k.test)
			if r.reason != "" {
				why = append(why, k.test+":\n"+r.reason)
			}
		case "skip":
			if fs.NArg() > 1 && !r.nested && strings.Contains(r.reason, "/dev/kvm") {
				nowhere = append(nowhere, k.pkg+"."+k.test)
			}
			skips[r.reason]++
		}
	}
	nskip := 0
	var reasons []string
	for r, n := range skips {
		nskip += n
		reasons = append(reasons, fmt.Sprintf("%d %q", n, r))
	}
	sort.Slice(reasons, func(i, j int) bool { return reasons[i] > reasons[j] })
	where := ""
	if fs.NArg() > 1 {
		where = fmt.Sprintf(" (%d of them inside %s)", passNested, *host)
	}
	fmt.Printf("make test: %d tests: %d passed%s, %d skipped, %d failed", pass+fail+nskip, pass, where, nskip, fail)
	if len(reasons) > 0 {
		fmt.Printf("; skipped: %s", strings.Join(reasons, ", "))
	}
	fmt.Println()
	if fs.NArg() > 1 && passNested == 0 {
		fmt.Println("make test: FAILED: no test passed inside the nested host")
		return 1, nil
	}
	code := 0
	if fail > 0 || len(pkgFail) > 0 {
		sort.Strings(failed)
		var pk []string
		for p := range pkgFail {
			pk = append(pk, p)
		}
		sort.Strings(pk)
		sort.Strings(why)
		for _, w := range why {
			fmt.Println(w)
		}
		fmt.Printf("make test: FAILED: %s (packages %s)\n", strings.Join(failed, ", "), strings.Join(pk, ", "))
		code = 1
	}
	if len(nowhere) > 0 {
		sort.Strings(nowhere)
		fmt.Printf("make test: FAILED: %d tests skipped for want of /dev/kvm ran nowhere: %s\n", len(nowhere), strings.Join(nowhere, ", "))
		code = 1
	}
	return code, nil
}
