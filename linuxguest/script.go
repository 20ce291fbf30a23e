package linuxguest

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"time"
)

// ScriptStep is one exchange with a guest shell: wait until the console
// shows Wait (a regexp matched after the previous step's match; "" waits
// for the shell's first prompt, the "u-root shell" milestone), then type
// Send.
type ScriptStep struct{ Wait, Send string }

// ConsoleScript types steps into the guest's console as its output shows
// up: it is a VM's console input (Config.ConsoleInput). It polls the
// console's log, so it never blocks the guest.
//
// Concurrency: one goroutine runs the script; Read is called by the
// serial pump; Done and Close may be called from anywhere.
type ConsoleScript struct {
	con   *Console
	steps []ScriptStep
	waits []*regexp.Regexp // steps[i].Wait compiled; nil for ""

	pr   *io.PipeReader
	pw   *io.PipeWriter
	done atomic.Int32 // steps sent
	stop chan struct{}
	once atomic.Bool
}

// ShellCommands is a script that runs each command at the shell's prompt,
// waiting for the expected output (a regexp) of each before the next,
// then powers the guest off. pairs alternates command, expected output.
func ShellCommands(pairs ...string) []ScriptStep {
	steps := []ScriptStep{}
	wait := ""
	for i := 0; i+1 < len(pairs); i += 2 {
		steps = append(steps, ScriptStep{wait, pairs[i] + "\n"})
		wait = pairs[i+1]
	}
	return append(steps, ScriptStep{wait, "poweroff\n"})
}

// NewConsoleScript starts typing steps into con's guest.
func NewConsoleScript(con *Console, steps ...ScriptStep) (*ConsoleScript, error) {
	waits := make([]*regexp.Regexp, len(steps))
	for i, st := range steps {
		if st.Wait == "" {
			continue
		}
		re, err := regexp.Compile(st.Wait)
		if err != nil {
			return nil, fmt.Errorf("console script: %w", err)
		}
		waits[i] = re
	}
	s := &ConsoleScript{con: con, steps: steps, waits: waits, stop: make(chan struct{})}
	s.pr, s.pw = io.Pipe()
	go s.run()
	return s, nil
}

func (s *ConsoleScript) run() {
	defer s.pw.Close()
	off := 0
	for i, st := range s.steps {
		re := s.waits[i]
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			log := s.con.Log()
			if re == nil {
				if s.Prompted() {
					off = len(log)
					break
				}
				continue
			}
			if loc := re.FindStringIndex(log[off:]); loc != nil {
				off += loc[1]
				break
			}
		}
		s.done.Add(1) // before the write: its reader may look right after
		if _, err := io.WriteString(s.pw, st.Send); err != nil {
			return
		}
	}
	<-s.stop
}

// Prompted reports whether the guest's shell has shown its prompt.
func (s *ConsoleScript) Prompted() bool {
	_, ok := Phase(s.con.Reached(), PhaseShell)
	return ok
}

func (s *ConsoleScript) Read(p []byte) (int, error) { return s.pr.Read(p) }

// Close ends the script (when the VM has ended).
func (s *ConsoleScript) Close() {
	if s.once.CompareAndSwap(false, true) {
		close(s.stop)
		s.pr.Close()
	}
}

// Finished says whether every step was typed, and if not which one waits.
func (s *ConsoleScript) Finished() error {
	n := int(s.done.Load())
	if n == len(s.steps) {
		return nil
	}
	w := s.steps[n].Wait
	if w == "" {
		w = "the shell prompt"
	}
	return fmt.Errorf("the console script stopped at step %d of %d: waiting for %q to type %q",
		n+1, len(s.steps), w, strings.TrimSpace(s.steps[n].Send))
}
