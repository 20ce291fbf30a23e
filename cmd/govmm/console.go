package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// consoleHelp is the part of run's and boot's help about console input.
const consoleHelp = `
Console input (--console-input): auto connects govmm's stdin to the guest's
serial console (COM1) when stdin is a terminal, a pipe or a file; stdin
connects it whatever it is; none gives the guest no input.

SIGINT, SIGTERM, SIGHUP or SIGQUIT stop the guest, print the report and
exit with status 2 (a second signal acts as usual), whatever the input.
A terminal is put in raw mode while the guest runs (Ctrl-C, Ctrl-Z and
Ctrl-\ go to the guest) and restored when govmm ends, also on errors and
on those signals. Escapes, as in QEMU:
  Ctrl-A x       quit: stop the guest, print the report ("ended by user"),
                 exit with status 0
  Ctrl-A Ctrl-A  send one Ctrl-A to the guest
  Ctrl-A h       list the escapes
  any other key after Ctrl-A is dropped.
From a pipe or a file, bytes go to the guest unchanged (no escapes) and EOF
only ends input: the guest keeps running. Input waits in the UART's 4 KiB
FIFO; when that is full govmm stops reading until the guest has read, so
nothing is lost on the way, but the guest's serial driver discards what
arrives before it starts. --timeout still applies to an interactive guest.
`

// consoleFlag is --console-input of run and boot.
type consoleFlag struct{ mode *string }

func addConsoleFlag(fs *flag.FlagSet) consoleFlag {
	return consoleFlag{fs.String("console-input", "auto",
		"the guest console's input: auto (stdin if it is a terminal, a pipe or a file), stdin, or none")}
}

// stdinKind is what govmm's stdin is, as far as console input cares.
type stdinKind int

const (
	stdinOther    stdinKind = iota // /dev/null, a socket, closed...
	stdinTerminal                  // raw mode and escapes
	stdinPipe
	stdinFile
)

func kindOf(f *os.File) stdinKind {
	if term.IsTerminal(int(f.Fd())) {
		return stdinTerminal
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		return stdinOther
	case fi.Mode()&os.ModeNamedPipe != 0:
		return stdinPipe
	case fi.Mode().IsRegular():
		return stdinFile
	}
	return stdinOther
}

// useStdin says whether --console-input=mode connects a stdin of kind k.
func useStdin(mode string, k stdinKind) (bool, error) {
	switch mode {
	case "none":
		return false, nil
	case "stdin":
		return true, nil
	case "auto":
		return k != stdinOther, nil
	}
	return false, fmt.Errorf("bad --console-input %q (want auto, stdin or none)", mode)
}

// consoleInput is the guest's console input for one run.
type consoleInput struct {
	r   io.Reader     // for vmm.Config.ConsoleInput; nil: no input
	tty *os.File      // stdin when it is a terminal: raw while the guest runs
	esc *escapeReader // the escapes, on a terminal only
}

// open decides the console input from the flag and what stdin is.
func (c consoleFlag) open(stdin *os.File) (*consoleInput, error) {
	k := kindOf(stdin)
	use, err := useStdin(*c.mode, k)
	if err != nil || !use {
		return &consoleInput{}, err
	}
	if k != stdinTerminal {
		return &consoleInput{r: stdin}, nil
	}
	esc := &escapeReader{r: stdin}
	return &consoleInput{r: esc, tty: stdin, esc: esc}, nil
}

// start readies the input for a run whose guest stop ends: the signals
// that end the run (stop("signal: NAME"), whatever the input is: a
// scripted or piped run stopped with SIGTERM still prints its report),
// and on a terminal raw mode and the escapes (quit calls stop("user")).
// The returned function undoes it all; call it on every path once the
// guest has stopped (calling it again is harmless). The terminal is also
// restored as soon as a signal arrives.
func (in *consoleInput) start(stop func(how string), help io.Writer) (func(), error) {
	restore := func() {}
	if in.tty != nil {
		in.esc.quit = func() { stop("user") }
		in.esc.help = help
		fd := int(in.tty.Fd())
		old, err := term.MakeRaw(fd)
		if err != nil {
			return nil, fmt.Errorf("cannot put the terminal in raw mode for console input (try --console-input=none): %w", err)
		}
		// Keep output processing, as QEMU does, so that govmm's own lines (a
		// SIGUSR2 dump) still start at the left margin.
		if t, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			t.Oflag |= unix.OPOST
			unix.IoctlSetTermios(fd, unix.TCSETS, t)
		}
		var once sync.Once
		restore = func() { once.Do(func() { term.Restore(fd, old) }) }
		fmt.Fprintln(help, "govmm: console input from the terminal (raw mode); Ctrl-A x quits, Ctrl-A h lists the escapes")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case s := <-sigs:
			restore()
			signal.Stop(sigs) // a second signal acts as usual
			stop("signal: " + s.String())
		case <-done:
		}
	}()
	var finish sync.Once
	return func() {
		finish.Do(func() {
			close(done)
			wg.Wait()
			signal.Stop(sigs)
			restore()
		})
	}, nil
}

const ctrlA = 0x01

const escapeHelp = `
govmm console escapes:
  Ctrl-A x       quit govmm (the guest is stopped)
  Ctrl-A Ctrl-A  send Ctrl-A to the guest
  Ctrl-A h       this help
`

// escapeReader passes terminal input on to the guest and takes out QEMU's
// escapes: Ctrl-A x calls quit and ends the input (EOF), Ctrl-A Ctrl-A
// passes one Ctrl-A, Ctrl-A h writes the list of escapes to help, and any
// other key after Ctrl-A is dropped. An escape may span two reads.
type escapeReader struct {
	r    io.Reader
	quit func()    // may be nil
	help io.Writer // may be nil
	esc  bool      // a Ctrl-A is waiting for its key
	done bool
}

func (e *escapeReader) Read(p []byte) (int, error) {
	for {
		if e.done {
			return 0, io.EOF
		}
		n, err := e.r.Read(p)
		out := 0 // filtered in place: out never passes the byte being read
		for _, b := range p[:n] {
			switch {
			case e.esc:
				e.esc = false
				switch b {
				case ctrlA:
					p[out] = b
					out++
				case 'x', 'X':
					e.done = true
					if e.quit != nil {
						e.quit()
					}
					return out, io.EOF
				case 'h', 'H', '?':
					if e.help != nil {
						fmt.Fprint(e.help, escapeHelp)
					}
				}
			case b == ctrlA:
				e.esc = true
			default:
				p[out] = b
				out++
			}
		}
		if out > 0 || err != nil || n == 0 {
			return out, err
		}
	}
}

// stopSignals stop the guest, whose report is then printed, and end govmm
// with status 128 + the signal's number (stoppedBy).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// stoppedBy says whether the user (Ctrl-A x) or a signal ended the run,
// and for a signal returns the command's error, with its exit status.
func stoppedBy(how string) (user bool, err error) {
	if how == "user" {
		return true, nil
	}
	for _, s := range stopSignals {
		if how == "signal: "+s.String() {
			return false, &statusError{128 + int(s.(syscall.Signal)), "stopped by " + how}
		}
	}
	return false, nil
}
