package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The streams below are go test -json's (cmd/test2json's) as they come;
// testdata/panic.json and testdata/timeout.json are real ones (go 1.26):
// a test that panics, and a subtest that ran past -timeout 1s.

const pkg = "example.com/p"

// noKVM is the tests' needKVM skip (tests/harness_test.go).
const noKVM = "SKIP: no usable /dev/kvm (open /dev/kvm: no such file or directory): this test needs KVM"

// stream is a go test -json stream under construction.
type stream []event

func (s stream) add(action, test, output string) stream {
	return append(s, event{Action: action, Package: pkg, Test: test, Output: output})
}

// ends runs test with output lines and ends it with action.
func (s stream) ends(test, action string, lines ...string) stream {
	s = s.add("run", test, "").add("output", test, "=== RUN   "+test+"\n")
	for _, l := range lines {
		s = s.add("output", test, "    x_test.go:7: "+l+"\n")
	}
	return s.add("output", test, "--- "+strings.ToUpper(action)+": "+test+" (0.00s)\n").add(action, test, "")
}

func (s stream) pass(test string) stream      { return s.ends(test, "pass") }
func (s stream) skip(test, why string) stream { return s.ends(test, "skip", why) }
func (s stream) fail(test, msg string) stream { return s.ends(test, "fail", msg) }
func (s stream) start() stream                { return s.add("start", "", "") }
func (s stream) end(action string) stream {
	return s.add("output", "", strings.ToUpper(action)+"\n").add(action, "", "")
}
func (s stream) parent(test string, kids stream) stream {
	s = s.add("run", test, "").add("output", test, "=== RUN   "+test+"\n")
	return append(s, kids...).add("output", test, "--- PASS: "+test+" (0.00s)\n").add("pass", test, "")
}

func (s stream) bytes(t *testing.T) []byte {
	var b bytes.Buffer
	for _, e := range s {
		j, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	return b.Bytes()
}

func testdata(t *testing.T, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logs are a run's log files by name; nil content: the file is not there.
type logs map[string][]byte

func TestTotal(t *testing.T) {
	pass := stream{}.start().pass("TestA").end("pass")
	kvmParent := stream{}.start().parent("TestP", stream{}.skip("TestP/1", noKVM).skip("TestP/2", noKVM)).end("pass")
	for _, c := range []struct {
		name    string
		logs    logs
		flags   []string
		nested  []string // the nested logs, after machine.json
		code    int
		want    []string // in the output
		wantNot []string
		last    string // the output's last line
	}{
		{name: "pass", logs: logs{"machine.json": pass.bytes(t)},
			code: 0, last: "make test: 1 tests: 1 passed, 0 skipped, 0 failed"},
		{name: "fail", logs: logs{"machine.json": stream{}.start().pass("TestA").fail("TestB", "wrong answer: 2").end("fail").bytes(t)},
			code: 1, want: []string{"make test: 2 tests: 1 passed, 0 skipped, 1 failed", "TestB:\n    x_test.go:7: wrong answer: 2"},
			last: "make test: FAILED: TestB (packages example.com/p)"},
		{name: "skip", logs: logs{"machine.json": stream{}.start().pass("TestA").skip("TestS", "SKIP: this kernel has no seccomp (no Seccomp line)").end("pass").bytes(t)},
			code: 0, last: `make test: 2 tests: 1 passed, 1 skipped, 0 failed; skipped: 1 "this kernel has no seccomp"`},
		{name: "all-skipped parent", logs: logs{"machine.json": stream{}.start().pass("TestA").
			parent("TestP", stream{}.skip("TestP/1", "SKIP: one").skip("TestP/2", "SKIP: two")).
			parent("TestQ", stream{}.skip("TestQ/x", "SKIP: three").pass("TestQ/y")).end("pass").bytes(t)},
			code: 0, last: `make test: 7 tests: 3 passed, 4 skipped, 0 failed; skipped: 1 "all its 2 subtests skipped", 1 "one", 1 "three", 1 "two"`},
		{name: "all-skipped parent of parents", logs: logs{"machine.json": stream{}.start().
			parent("TestP", stream{}.parent("TestP/a", stream{}.skip("TestP/a/1", "SKIP: one"))).end("pass").bytes(t)},
			code: 0, last: `make test: 3 tests: 0 passed, 3 skipped, 0 failed; skipped: 3 "one"`},
		{name: "panic", logs: logs{"machine.json": testdata(t, "panic.json")},
			code: 1, want: []string{"make test: 2 tests: 1 passed, 0 skipped, 1 failed", "TestPanic:\npanic: boom"},
			last: "make test: FAILED: TestPanic (packages example.com/p)"},
		{name: "timeout", logs: logs{"machine.json": testdata(t, "timeout.json")},
			code: 1, want: []string{"make test: 3 tests: 1 passed, 0 skipped, 2 failed",
				"TestSlow/inner:\n" + neverEnded + ":\npanic: test timed out after 1s"},
			last: "make test: FAILED: TestSlow, TestSlow/inner (packages example.com/p)"},
		{name: "build failure", logs: logs{"machine.json": append(pass.bytes(t), stream{{Action: "start", Package: "example.com/q"},
			{Action: "output", Package: "example.com/q", Output: "FAIL\texample.com/q [build failed]\n"}, {Action: "fail", Package: "example.com/q"}}.bytes(t)...)},
			code: 1, want: []string{"make test: 1 tests: 1 passed, 0 skipped, 0 failed"}, last: "make test: FAILED: packages example.com/q"},
		{name: "run cut short", logs: logs{"machine.json": stream{}.start().pass("TestA").add("run", "TestB", "").bytes(t)},
			code: 1, want: []string{"make test: 2 tests: 1 passed, 0 skipped, 1 failed", "TestB:\n" + neverEnded},
			last: "make test: FAILED: TestB (packages example.com/p)"},
		{name: "nested log missing", logs: logs{"machine.json": pass.bytes(t), "nested.json": nil}, nested: []string{"nested.json"},
			code: 1, want: []string{"make test: 1 tests: 1 passed (0 of them inside the nested host), 0 skipped, 0 failed"},
			last: "make test: FAILED: there is no log nested.json: the run that writes it did not run"},
		{name: "nested log empty", logs: logs{"machine.json": pass.bytes(t), "nested.json": {}, "vtx.json": pass.bytes(t)}, nested: []string{"nested.json", "vtx.json"},
			code: 1, last: "make test: FAILED: the log nested.json holds no test events: its run did not start"},
		{name: "nothing passed nested", logs: logs{"machine.json": pass.bytes(t), "nested.json": stream{}.start().skip("TestN", "SKIP: on request").end("pass").bytes(t)},
			nested: []string{"nested.json"}, code: 1, last: "make test: FAILED: no test passed inside the nested host"},
		{name: "no KVM on the machine, NESTED=off", logs: logs{"machine.json": kvmParent.bytes(t)},
			code: 1, want: []string{`make test: 3 tests: 0 passed, 3 skipped, 0 failed; skipped: 3 "no usable /dev/kvm: this test needs KVM"`},
			last: "make test: FAILED: 3 tests skipped for want of /dev/kvm: example.com/p.TestP, example.com/p.TestP/1, example.com/p.TestP/2 (a run without KVM is one you ask for: make test ALLOW_NO_KVM=1)"},
		{name: "no KVM, asked for", logs: logs{"machine.json": kvmParent.bytes(t)}, flags: []string{"-allow-no-kvm"},
			code: 0, want: []string{"make test: 3 tests skipped for want of /dev/kvm, as asked (ALLOW_NO_KVM=1)"},
			last: `make test: 3 tests: 0 passed, 3 skipped, 0 failed; skipped: 3 "no usable /dev/kvm: this test needs KVM"`},
		{name: "no KVM in the nested host", logs: logs{"machine.json": pass.bytes(t), "nested.json": stream{}.start().pass("TestN").skip("TestK", noKVM).end("pass").bytes(t)},
			nested: []string{"nested.json"}, code: 1, want: []string{"make test: 3 tests: 2 passed (1 of them inside the nested host), 1 skipped, 0 failed"},
			last: "make test: FAILED: 1 tests skipped for want of /dev/kvm: example.com/p.TestK (a run without KVM is one you ask for: make test ALLOW_NO_KVM=1)"},
		{name: "emulating-host tests on kvm_pvm", logs: logs{"machine.json": pass.bytes(t),
			"nested.json": stream{}.start().pass("TestN").skip("TestDoorbellForgery", "SKIP: with hardware virtualization govmm does not offer the doorbell").
				parent("TestSyscallDoorbell", stream{}.pass("TestSyscallDoorbell/1").skip("TestSyscallDoorbell/off", "SKIP: with hardware virtualization")).end("pass").bytes(t),
			"pvm.json": stream{}.start().pass("TestDoorbellForgery").parent("TestSyscallDoorbell", stream{}.pass("TestSyscallDoorbell/1").pass("TestSyscallDoorbell/off")).end("pass").bytes(t)},
			flags: []string{"-nested-host", "the nested hosts", "-pvm", "pvm.json"}, nested: []string{"nested.json"},
			code: 0, last: "make test: 6 tests: 6 passed (3 of them inside the nested hosts, 4 on this machine's kvm_pvm), 0 skipped, 0 failed"},
		{name: "kvm_pvm log missing", logs: logs{"machine.json": pass.bytes(t), "nested.json": pass.bytes(t), "pvm.json": nil},
			flags: []string{"-pvm", "pvm.json"}, nested: []string{"nested.json"}, code: 1,
			want: []string{"make test: FAILED: no test passed on this machine's kvm_pvm"},
			last: "make test: FAILED: there is no log pvm.json: the run that writes it did not run"},
		{name: "a failure anywhere is a failure", logs: logs{"machine.json": pass.bytes(t),
			"nested.json": stream{}.start().fail("TestN", "lost an IPI").end("fail").bytes(t), "pvm.json": stream{}.start().pass("TestN").end("pass").bytes(t)},
			flags: []string{"-pvm", "pvm.json"}, nested: []string{"nested.json"}, code: 1,
			want: []string{"make test: 2 tests: 1 passed (0 of them inside the nested host, 0 on this machine's kvm_pvm), 0 skipped, 1 failed"},
			last: "make test: FAILED: TestN (packages example.com/p)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range c.logs {
				if b != nil {
					if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			t.Chdir(dir)
			var out bytes.Buffer
			code, err := total(append(append(c.flags, "machine.json"), c.nested...), &out)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, out.String(), code, c.code, c.want, c.wantNot, c.last)
		})
	}
}

func checkOutput(t *testing.T, out string, code, wantCode int, want, wantNot []string, last string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("exit status %d, want %d", code, wantCode)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
	for _, w := range wantNot {
		if strings.Contains(out, w) {
			t.Errorf("output has %q", w)
		}
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if got := lines[len(lines)-1]; last != "" && got != last {
		t.Errorf("last line\n%s\nwant\n%s", got, last)
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// TestFilter: what make test prints as the runs go, and the log it keeps.
func TestFilter(t *testing.T) {
	build := []byte(`{"ImportPath":"example.com/p [example.com/p.test]","Action":"build-output","Output":"# example.com/p [example.com/p.test]\n"}
{"ImportPath":"example.com/p [example.com/p.test]","Action":"build-output","Output":"p/p_test.go:3:28: undefined: undefined\n"}
{"ImportPath":"example.com/p [example.com/p.test]","Action":"build-fail"}
{"Action":"start","Package":"example.com/p"}
{"Action":"output","Package":"example.com/p","Output":"FAIL\texample.com/p [build failed]\n"}
{"Action":"fail","Package":"example.com/p","Elapsed":0,"FailedBuild":"example.com/p [example.com/p.test]"}
`)
	for _, c := range []struct {
		name    string
		in      []byte
		flags   []string
		code    int
		want    []string
		wantNot []string
		last    string
	}{
		{name: "pass", in: stream{}.start().pass("TestA").skip("TestS", "SKIP: why").end("pass").bytes(t), flags: []string{"-tests"},
			want: []string{"    --- PASS: TestA (0.0s)\n", "    --- SKIP: TestS (0.0s)\n", "ok   example.com/p\t0.0s\n"}, wantNot: []string{"=== RUN"}},
		{name: "fail", in: stream{}.start().pass("TestA").fail("TestB", "wrong answer: 2").end("fail").bytes(t), code: 1,
			want: []string{"=== RUN   TestB\n    x_test.go:7: wrong answer: 2\n--- FAIL: TestB (0.00s)\nFAIL\n"}, wantNot: []string{"TestA", "ok "}},
		{name: "panic", in: testdata(t, "panic.json"), code: 1, want: []string{"--- FAIL: TestPanic (0.00s)\npanic: boom", "FAIL\texample.com/p\t"}},
		{name: "timeout", in: testdata(t, "timeout.json"), code: 1,
			want: []string{"--- NEVER ENDED: example.com/p TestSlow\n=== RUN   TestSlow\n--- NEVER ENDED: example.com/p TestSlow/inner\n=== RUN   TestSlow/inner\npanic: test timed out after 1s\n"},
			last: "FAIL\texample.com/p\t1.005s"}, // the package's end after the panic of the tests it cut short
		{name: "run cut short", in: stream{}.start().pass("TestA").add("run", "TestB", "").add("output", "TestB", "=== RUN   TestB\n").bytes(t), code: 1,
			want: []string{"--- NEVER ENDED: example.com/p TestB\n=== RUN   TestB\n"}},
		{name: "build failure", in: build, code: 1, want: []string{"p/p_test.go:3:28: undefined: undefined\n", "FAIL\texample.com/p [build failed]\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log.json")
			var out bytes.Buffer
			code, err := filter(append(c.flags, log), bytes.NewReader(c.in), &out)
			if err != nil {
				t.Fatal(err)
			}
			checkOutput(t, out.String(), code, c.code, c.want, c.wantNot, c.last)
			if saved, err := os.ReadFile(log); err != nil || !bytes.Equal(saved, c.in) {
				t.Errorf("the log holds %d bytes (%v), want the %d of the stream", len(saved), err, len(c.in))
			}
		})
	}
}
