package tests

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/govmm/govmm/vmm"
)

// step is one exchange with the guest's u-root shell: wait until the
// console shows wait (a regexp matched after the previous step's match;
// "" waits for the shell's first prompt), then type send.
type step struct{ wait, send string }

// shellScript types steps into the guest's console as its output shows up.
// It is the VM's console input (vmm.Config.ConsoleInput).
type shellScript struct {
	con   *vmm.Console
	steps []step
	pr    *io.PipeReader
	pw    *io.PipeWriter
	done  atomic.Int32 // steps sent
	stop  chan struct{}
}

func newShellScript(con *vmm.Console, steps ...step) *shellScript {
	s := &shellScript{con: con, steps: steps, stop: make(chan struct{})}
	s.pr, s.pw = io.Pipe()
	go s.run()
	return s
}

// commands is a script that runs each command, waits for its expected
// output, then powers the guest off. cmds alternates command, expected
// output (a regexp).
func commands(cmds ...string) []step {
	steps := []step{}
	wait := ""
	for i := 0; i+1 < len(cmds); i += 2 {
		steps = append(steps, step{wait, cmds[i] + "\n"})
		wait = cmds[i+1]
	}
	return append(steps, step{wait, "poweroff\n"})
}

func (s *shellScript) run() {
	defer s.pw.Close()
	off := 0
	for _, st := range s.steps {
		var re *regexp.Regexp
		if st.wait != "" {
			re = regexp.MustCompile(st.wait)
		}
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			log := s.con.Log()
			if re == nil {
				if s.prompted() {
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
		if _, err := io.WriteString(s.pw, st.send); err != nil {
			return
		}
		s.done.Add(1)
	}
	<-s.stop
}

func (s *shellScript) prompted() bool {
	for _, p := range s.con.Reached() {
		if p.Name == "u-root shell" {
			return true
		}
	}
	return false
}

func (s *shellScript) Read(p []byte) (int, error) { return s.pr.Read(p) }

// Close ends the script (call when the VM has ended).
func (s *shellScript) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.pr.Close()
}

// finished says whether every step was sent, and if not which one waits.
func (s *shellScript) finished() error {
	n := int(s.done.Load())
	if n == len(s.steps) {
		return nil
	}
	w := s.steps[n].wait
	if w == "" {
		w = "the shell prompt"
	}
	return fmt.Errorf("the shell script stopped at step %d of %d: waiting for %q to type %q",
		n+1, len(s.steps), w, strings.TrimSpace(s.steps[n].send))
}
