// Command testsummary is make test's reporter. It reads go test -json
// event streams (go test -json on the machine, test2json of the test
// binaries run inside the nested hosts) and prints them the way go test
// does without -v (a line per package, the whole output of each failing
// test), then one summary line over all runs: how many tests ran, where,
// how many skipped and why, how many failed.
//
//	testsummary filter [-tests] LOG   < events   (copies the events to LOG)
//	testsummary total [-nested-host NAME] [-pvm LOG [-pvm-host NAME]] [-allow-no-kvm] MACHINE.json [NESTED.json...]
//
// filter -tests also prints each top-level test's result as it ends (the
// nested run is long). -pvm is the log of the tests of the emulating-host
// paths run on this machine's own /dev/kvm when it is kvm_pvm's.
//
// A test's result over all logs is its worst: a failure anywhere is a
// failure, a pass anywhere beats a skip elsewhere (the emulating-host
// tests skip in the nested hosts and run on kvm_pvm). A test that began
// and never ended (its package timed out, its run was cut short) failed; a
// test whose subtests all skipped is skipped, not passed. total exits 1
// when a test or package failed, when a log it was given is missing or
// empty, when no test passed in the nested hosts (or on kvm_pvm) though
// their logs were given, and when any test skipped for want of /dev/kvm,
// wherever it ran, unless -allow-no-kvm says the user asked for that: no
// test may be skipped without saying so.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
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
		fmt.Fprintln(os.Stderr, "usage: testsummary filter [-tests] LOG | total [-nested-host NAME] [-pvm LOG] [-allow-no-kvm] MACHINE.json [NESTED.json...]")
		os.Exit(2)
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "filter":
		code, err = filter(os.Args[2:], os.Stdin, os.Stdout)
	case "total":
		code, err = total(os.Args[2:], os.Stdout)
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

// collector holds each test's output until the event that ends it, and
// knows which tests and packages began and have not ended.
type collector struct {
	out     map[key][]string
	running map[key]bool
}

func newCollector() *collector {
	return &collector{out: map[key][]string{}, running: map[key]bool{}}
}

// take records e; for an event that ends a test or package (pass, skip,
// fail) it returns that one's output and forgets it.
func (c *collector) take(e event) (lines []string, ended bool) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "start", "run":
		c.running[k] = true
	case "output":
		c.out[k] = append(c.out[k], e.Output)
	case "pass", "skip", "fail":
		lines = c.out[k]
		delete(c.out, k)
		delete(c.running, k)
		return lines, true
	}
	return nil, false
}

// unended forgets and returns, sorted, the tests of package pkg (of every
// package, and the packages themselves, when all) that began and did not
// end, each with its output.
func (c *collector) unended(pkg string, all bool) ([]key, map[key][]string) {
	var ks []key
	out := map[key][]string{}
	for k := range c.running {
		if all || k.pkg == pkg && k.test != "" {
			ks = append(ks, k)
			out[k] = c.out[k]
			delete(c.running, k)
			delete(c.out, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].pkg+" "+ks[i].test < ks[j].pkg+" "+ks[j].test })
	return ks, out
}

// filter echoes a stream in go test's short form and saves it.
func filter(args []string, in io.Reader, w io.Writer) (int, error) {
	fset := flag.NewFlagSet("filter", flag.ContinueOnError)
	each := fset.Bool("tests", false, "print each top-level test's result as it ends")
	if err := fset.Parse(args); err != nil || fset.NArg() != 1 {
		return 0, fmt.Errorf("filter takes one LOG file")
	}
	log, err := os.OpenFile(fset.Arg(0), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	c := newCollector()
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(w, string(line)) // not an event: go test's own message (a build error)
			continue
		}
		log.Write(append(line, '\n'))
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output) // a build error, as go test prints it
			continue
		}
		lines, ended := c.take(e)
		if !ended {
			continue
		}
		if e.Action == "fail" {
			failed = true
			if e.Test == "" {
				// A timeout's panic is the output of the tests it
				// interrupted, which never end.
				printUnended(w, c, e.Package, false)
			}
			// Each failing test's own output, subtests' included
			// (go test -json gives a subtest's lines to it, not to
			// its parent, whose own lines come at its end).
			fmt.Fprint(w, strings.Join(lines, ""))
		}
		if e.Test == "" {
			if e.Action != "fail" {
				fmt.Fprintf(w, "%-4s %s\t%.1fs\n", "ok", e.Package, e.Elapsed)
			}
		} else if *each && !strings.Contains(e.Test, "/") && e.Action != "fail" {
			fmt.Fprintf(w, "    --- %s: %s (%.1fs)\n", strings.ToUpper(e.Action), e.Test, e.Elapsed)
		}
	}
	if printUnended(w, c, "", true) {
		failed = true
	}
	if failed {
		return 1, sc.Err()
	}
	return 0, sc.Err()
}

// printUnended prints the tests (of pkg, or all tests and packages) that
// began and never ended, with their output; it says whether there were any.
func printUnended(w io.Writer, c *collector, pkg string, all bool) bool {
	ks, out := c.unended(pkg, all)
	for _, k := range ks {
		fmt.Fprintf(w, "--- NEVER ENDED: %s %s\n%s", k.pkg, k.test, strings.Join(out[k], ""))
	}
	return len(ks) > 0
}

// result is a test's last word.
type result struct {
	action string // pass, fail, skip
	reason string // a skip's reason; a failure's first message lines
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
// its lines from the first t.Error or t.Fatal line ("file.go:N: ...") or
// panic ("panic: ...", a timeout's too), and up to three later lines a
// guest printed as its verdict ("FAIL ..."), each cut to 160 characters.
// The summary repeats it after the FAILED line, so that the last lines of
// a long run say why (the whole output is above).
func failMessage(lines []string) string {
	var msg []string
	verdicts := 0
	for _, l := range lines {
		l = strings.TrimRight(l, "\n")
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "--- ") || t == "":
			continue
		case len(msg) == 0 && !strings.Contains(l, ".go:") && !strings.HasPrefix(t, "panic: "):
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

// neverEnded is the reason of a test that began and did not end.
const neverEnded = "it never ended (its package timed out or crashed, or the run was cut short)"

// logRun is one log's results.
type logRun struct {
	res     map[key]*result
	pkgFail map[string]bool
	events  int
}

// readLog loads one log. Lines that are not events (a line cut short when
// a run was killed) are passed over.
func readLog(path string) (*logRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run := &logRun{res: map[key]*result{}, pkgFail: map[string]bool{}}
	c := newCollector()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			continue
		}
		run.events++
		lines, ended := c.take(e)
		switch {
		case !ended:
		case e.Test == "":
			if e.Action == "fail" {
				run.pkgFail[e.Package] = true
			}
		default:
			r := &result{action: e.Action}
			switch e.Action {
			case "skip":
				r.reason = skipReason(lines)
			case "fail":
				r.reason = failMessage(lines)
			}
			run.res[key{e.Package, e.Test}] = r
		}
	}
	run.addUnended(c.unended("", true)) // a timeout's, or a run cut short
	skipEmptyParents(run.res)
	return run, sc.Err()
}

// addUnended records tests that never ended as failed, and their
// packages (and packages that never ended) as failed.
func (run *logRun) addUnended(ks []key, out map[key][]string) {
	for _, k := range ks {
		run.pkgFail[k.pkg] = true
		if k.test == "" {
			continue
		}
		why := neverEnded
		if m := failMessage(out[k]); m != "" {
			why += ":\n" + m
		}
		run.res[k] = &result{action: "fail", reason: why}
	}
}

// skipEmptyParents makes a test that passed while every one of its
// subtests skipped a skip (go test calls it a pass): it checked nothing.
// Its reason is its subtests' when they share one.
func skipEmptyParents(res map[key]*result) {
	kids := map[key][]key{}
	var parents []key
	for k := range res {
		if i := strings.LastIndex(k.test, "/"); i >= 0 {
			p := key{k.pkg, k.test[:i]}
			if len(kids[p]) == 0 {
				parents = append(parents, p)
			}
			kids[p] = append(kids[p], k)
		}
	}
	// Deepest first: a parent of parents that all skipped skips too.
	sort.Slice(parents, func(i, j int) bool {
		return strings.Count(parents[i].test, "/") > strings.Count(parents[j].test, "/")
	})
	for _, p := range parents {
		r := res[p]
		if r == nil || r.action != "pass" {
			continue
		}
		reasons := map[string]bool{}
		for _, k := range kids[p] {
			if res[k].action != "skip" {
				reasons = nil
				break
			}
			reasons[res[k].reason] = true
		}
		if reasons == nil {
			continue
		}
		r.action, r.reason = "skip", fmt.Sprintf("all its %d subtests skipped", len(kids[p]))
		if len(reasons) == 1 {
			r.reason = res[kids[p][0]].reason
		}
	}
}

// Where a log's tests ran.
type place int

const (
	machine place = iota // this machine, under whatever /dev/kvm it has
	nested               // inside a nested host
	pvm                  // on this machine's own /dev/kvm, kvm_pvm's
	places
)

// rank orders a test's results over the logs: its worst counts, and a
// pass anywhere beats a skip elsewhere.
var rank = map[string]int{"skip": 1, "pass": 2, "fail": 3}

// merged is a test's result over every log.
type merged struct {
	result
	passed [places]bool // where it passed
}

// summary is every log's results together.
type summary struct {
	tests    map[key]*merged
	pkgFail  map[string]bool
	passedIn [places]int // tests that passed in each place
	given    [places]bool
	problems []string // a log missing or empty
}

// add merges one log's results, or notes that it is missing or empty.
func (s *summary) add(path string, at place) error {
	s.given[at] = true
	run, err := readLog(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.problems = append(s.problems, fmt.Sprintf("there is no log %s: the run that writes it did not run", path))
		return nil
	} else if err != nil {
		return err
	}
	if run.events == 0 {
		s.problems = append(s.problems, fmt.Sprintf("the log %s holds no test events: its run did not start", path))
	}
	for p := range run.pkgFail {
		s.pkgFail[p] = true
	}
	for k, r := range run.res {
		m := s.tests[k]
		if m == nil {
			m = &merged{}
			s.tests[k] = m
		}
		if rank[r.action] > rank[m.action] {
			m.result = *r
		}
		if r.action == "pass" {
			m.passed[at] = true
		}
	}
	return nil
}

// wantsKVM says whether a skip's reason is the want of /dev/kvm (the
// tests' needKVM helpers, hostprobe's).
func wantsKVM(reason string) bool { return strings.Contains(reason, "/dev/kvm") }

// names lists at most ten tests, and how many more there are.
func names(ks []string) string {
	sort.Strings(ks)
	if len(ks) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(ks[:10], ", "), len(ks)-10)
	}
	return strings.Join(ks, ", ")
}

func total(args []string, w io.Writer) (int, error) {
	fset := flag.NewFlagSet("total", flag.ContinueOnError)
	host := fset.String("nested-host", "the nested host", "what the nested runs ran on")
	pvmLog := fset.String("pvm", "", "the log of the tests run on this machine's kvm_pvm")
	pvmHost := fset.String("pvm-host", "this machine's kvm_pvm", "what the -pvm run ran on")
	allowNoKVM := fset.Bool("allow-no-kvm", false, "tests skipped for want of /dev/kvm do not fail the run (make test ALLOW_NO_KVM=1)")
	if err := fset.Parse(args); err != nil || fset.NArg() < 1 {
		return 0, fmt.Errorf("total takes MACHINE.json and, if guest tests ran nested, their NESTED.json files")
	}
	s := &summary{tests: map[key]*merged{}, pkgFail: map[string]bool{}}
	for i, p := range fset.Args() {
		if err := s.add(p, min(place(i), nested)); err != nil {
			return 0, err
		}
	}
	if *pvmLog != "" {
		if err := s.add(*pvmLog, pvm); err != nil {
			return 0, err
		}
	}
	var pass, fail int
	skips := map[string]int{}
	var failed, noKVM, why []string
	for k, m := range s.tests {
		switch m.action {
		case "pass":
			pass++
			for at := range places {
				if m.passed[at] {
					s.passedIn[at]++
				}
			}
		case "fail":
			fail++
			failed = append(failed, k.test)
			if m.reason != "" {
				why = append(why, k.test+":\n"+m.reason)
			}
		case "skip":
			if wantsKVM(m.reason) {
				noKVM = append(noKVM, k.pkg+"."+k.test)
			}
			skips[m.reason]++
		}
	}
	if *allowNoKVM && len(noKVM) > 0 {
		fmt.Fprintf(w, "make test: %d tests skipped for want of /dev/kvm, as asked (ALLOW_NO_KVM=1)\n", len(noKVM))
	}
	s.printLine(w, pass, fail, skips, *host, *pvmHost)
	code := 0
	fails := func(format string, a ...any) {
		fmt.Fprintf(w, "make test: FAILED: "+format+"\n", a...)
		code = 1
	}
	if s.given[nested] && s.passedIn[nested] == 0 {
		fails("no test passed inside %s", *host)
	}
	if s.given[pvm] && s.passedIn[pvm] == 0 {
		fails("no test passed on %s", *pvmHost)
	}
	if fail > 0 || len(s.pkgFail) > 0 {
		var pk []string
		for p := range s.pkgFail {
			pk = append(pk, p)
		}
		sort.Strings(pk)
		sort.Strings(failed)
		sort.Strings(why)
		for _, l := range why {
			fmt.Fprintln(w, l)
		}
		if len(failed) == 0 { // a build failure, a crash outside any test
			fails("packages %s", strings.Join(pk, ", "))
		} else {
			fails("%s (packages %s)", strings.Join(failed, ", "), strings.Join(pk, ", "))
		}
	}
	if len(noKVM) > 0 && !*allowNoKVM {
		fails("%d tests skipped for want of /dev/kvm: %s (a run without KVM is one you ask for: make test ALLOW_NO_KVM=1)", len(noKVM), names(noKVM))
	}
	for _, p := range s.problems {
		fails("%s", p)
	}
	return code, nil
}

// printLine prints the summary line: the counts, where the tests that
// passed ran, and each skip's reason with its count, most first.
func (s *summary) printLine(w io.Writer, pass, fail int, skips map[string]int, host, pvmHost string) {
	nskip := 0
	type reason struct {
		n    int
		text string
	}
	var rs []reason
	for r, n := range skips {
		nskip += n
		rs = append(rs, reason{n, r})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n || rs[i].n == rs[j].n && rs[i].text < rs[j].text })
	var where []string
	if s.given[nested] {
		where = append(where, fmt.Sprintf("%d of them inside %s", s.passedIn[nested], host))
	}
	if s.given[pvm] {
		where = append(where, fmt.Sprintf("%d on %s", s.passedIn[pvm], pvmHost))
	}
	fmt.Fprintf(w, "make test: %d tests: %d passed", pass+fail+nskip, pass)
	if len(where) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(where, ", "))
	}
	fmt.Fprintf(w, ", %d skipped, %d failed", nskip, fail)
	for i, r := range rs {
		fmt.Fprintf(w, map[bool]string{true: "; skipped: ", false: ", "}[i == 0]+"%d %q", r.n, r.text)
	}
	fmt.Fprintln(w)
}
