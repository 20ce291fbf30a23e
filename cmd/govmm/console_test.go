package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/sys/unix"
)

func TestEscapeReader(t *testing.T) {
	cases := []struct {
		name, in, want string
		quit           bool
	}{
		{"plain", "ls -l\r", "ls -l\r", false},
		{"literal ctrl-a", "a\x01\x01b", "a\x01b", false},
		{"quit", "echo\x01xlost", "echo", true},
		{"quit upper case", "\x01X", "", true},
		{"help is not sent", "a\x01hb", "ab", false},
		{"unknown escape dropped", "a\x01qb", "ab", false},
		{"ctrl-c passes", "\x03\x1a\x1c", "\x03\x1a\x1c", false},
		{"trailing ctrl-a waits", "ab\x01", "ab", false},
	}
	for _, c := range cases {
		for _, oneByte := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/onebyte=%v", c.name, oneByte), func(t *testing.T) {
				var r io.Reader = strings.NewReader(c.in)
				if oneByte { // escapes split across reads
					r = iotest.OneByteReader(r)
				}
				quits := 0
				var help bytes.Buffer
				e := &escapeReader{r: r, quit: func() { quits++ }, help: &help}
				got, err := io.ReadAll(e)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != c.want {
					t.Errorf("passed %q, want %q", got, c.want)
				}
				if (quits == 1) != c.quit || quits > 1 {
					t.Errorf("quit called %d times", quits)
				}
				if strings.Contains(c.in, "\x01h") != strings.Contains(help.String(), "Ctrl-A x") {
					t.Errorf("help output %q", help.String())
				}
			})
		}
	}
}

func TestUseStdin(t *testing.T) {
	kinds := []stdinKind{stdinOther, stdinTerminal, stdinPipe, stdinFile}
	want := map[string][]bool{
		"auto":  {false, true, true, true},
		"stdin": {true, true, true, true},
		"none":  {false, false, false, false},
	}
	for mode, w := range want {
		for i, k := range kinds {
			got, err := useStdin(mode, k)
			if err != nil || got != w[i] {
				t.Errorf("useStdin(%q, %d) = %v, %v; want %v", mode, k, got, err, w[i])
			}
		}
	}
	if _, err := useStdin("tty", stdinTerminal); err == nil || !strings.Contains(err.Error(), "--console-input") {
		t.Errorf("bad mode: %v", err)
	}
}

func TestKindOf(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if k := kindOf(r); k != stdinPipe {
		t.Errorf("pipe: kind %d", k)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if k := kindOf(f); k != stdinFile {
		t.Errorf("file: kind %d", k)
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if k := kindOf(null); k != stdinOther {
		t.Errorf("%s: kind %d", os.DevNull, k)
	}
	if _, tty := openPTY(t); kindOf(tty) != stdinTerminal {
		t.Error("pty: not a terminal")
	}
}

// openPTY returns a pseudo-terminal's two sides, or skips the test.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}

func termios(t *testing.T, f *os.File) unix.Termios {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return *tio
}

// TestConsoleTerminal: on a terminal, start makes it raw (keeping output
// processing), the escape reaches stop("user"), and the returned function
// restores the terminal exactly.
func TestConsoleTerminal(t *testing.T) {
	ptm, pts := openPTY(t)
	before := termios(t, pts)
	mode := "auto"
	in, err := consoleFlag{&mode}.open(pts)
	if err != nil || in.tty == nil || in.esc == nil {
		t.Fatalf("open on a terminal: %+v, %v", in, err)
	}
	stopped := make(chan string, 1)
	var help bytes.Buffer
	end, err := in.start(func(how string) { stopped <- how }, &help)
	if err != nil {
		t.Fatal(err)
	}
	raw := termios(t, pts)
	if raw.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 || raw.Oflag&unix.OPOST == 0 {
		t.Errorf("raw termios: lflag %#x oflag %#x: want no ICANON/ECHO/ISIG, OPOST kept", raw.Lflag, raw.Oflag)
	}
	ptm.Write([]byte("hi\x03\x01x"))
	got, _ := io.ReadAll(in.r)
	if string(got) != "hi\x03" {
		t.Errorf("the guest got %q, want \"hi\\x03\"", got)
	}
	select {
	case how := <-stopped:
		if how != "user" {
			t.Errorf("stopped by %q", how)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-A x did not stop the guest")
	}
	end()
	end() // harmless twice
	if after := termios(t, pts); after != before {
		t.Errorf("terminal not restored:\n before %+v\n after  %+v", before, after)
	}
}

// TestConsoleSignal: a signal while the terminal is raw restores it at once
// and stops the guest with the signal's name.
func TestConsoleSignal(t *testing.T) {
	_, pts := openPTY(t)
	before := termios(t, pts)
	mode := "stdin"
	in, err := consoleFlag{&mode}.open(pts)
	if err != nil {
		t.Fatal(err)
	}
	how, end := signalStops(t, in, syscall.SIGHUP)
	defer end() // after the check below: the signal itself must restore the terminal
	if how != "signal: hangup" {
		t.Errorf("stopped by %q", how)
	}
	if _, err := stoppedBy(how); err == nil || !strings.Contains(err.Error(), "hangup") {
		t.Errorf("stoppedBy(%q) = %v", how, err)
	}
	if after := termios(t, pts); after != before {
		t.Errorf("terminal not restored after the signal")
	}
}

// TestSignalWithoutTerminal: with no console input (a scripted run), a
// signal still stops the guest by name, so that govmm prints its report.
func TestSignalWithoutTerminal(t *testing.T) {
	none := "none"
	in, err := consoleFlag{&none}.open(os.Stdin)
	if err != nil || in.tty != nil {
		t.Fatalf("open: %+v, %v", in, err)
	}
	how, end := signalStops(t, in, syscall.SIGTERM)
	defer end()
	if how != "signal: terminated" {
		t.Errorf("stopped by %q", how)
	}
}

// signalStops starts in, sends sig to this process and returns how the
// run was stopped and the input's end function, which the caller runs
// once it has checked what the signal alone did; it fails the test if
// sig stops nothing within 5 s.
func signalStops(t *testing.T, in *consoleInput, sig syscall.Signal) (string, func()) {
	t.Helper()
	stopped := make(chan string, 1)
	end, err := in.start(func(how string) { stopped <- how }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), sig)
	select {
	case how := <-stopped:
		return how, end
	case <-time.After(5 * time.Second):
		end()
		t.Fatalf("%v did not stop the guest", sig)
		return "", nil
	}
}

// TestConsolePipe: a pipe goes to the guest unchanged (Ctrl-A included),
// with no raw mode to set up.
func TestConsolePipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mode := "auto"
	in, err := consoleFlag{&mode}.open(r)
	if err != nil || in.tty != nil || in.r == nil {
		t.Fatalf("open on a pipe: %+v, %v", in, err)
	}
	end, err := in.start(func(string) { t.Error("stopped") }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	w.Write([]byte("a\x01xb"))
	w.Close()
	if got, _ := io.ReadAll(in.r); string(got) != "a\x01xb" {
		t.Errorf("the guest got %q", got)
	}
	none := "none"
	if in, _ := (consoleFlag{&none}).open(r); in.r != nil {
		t.Error("--console-input=none still reads stdin")
	}
}
