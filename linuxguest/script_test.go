package linuxguest

import (
	"bufio"
	"strings"
	"testing"
	"time"
)

// TestConsoleScript: nothing is typed before the shell's first prompt;
// each later line waits for its expected output, which must appear after
// the previous match (an old occurrence does not count).
func TestConsoleScript(t *testing.T) {
	con := NewConsole(nil, BootMilestones)
	s, err := NewConsoleScript(con, ShellCommands("echo hi", `^hi|\nhi`, "irqstat", `CAL`)...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lines := make(chan string, 8)
	go func() {
		r := bufio.NewReader(s)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- strings.TrimSpace(l)
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("typed %q, want %q", l, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("nothing typed, want %q (%v)", want, s.Finished())
		}
	}
	none := func() {
		t.Helper()
		select {
		case l := <-lines:
			t.Fatalf("typed %q too early", l)
		case <-time.After(300 * time.Millisecond):
		}
	}
	con.Write([]byte("CAL 1 2 3\nRun /init as init process\n"))
	none()
	con.Write([]byte("$ "))
	expect("echo hi")
	con.Write([]byte("echo hi\nhi\n$ "))
	expect("irqstat")
	none() // "CAL" before the irqstat command does not count
	con.Write([]byte("irqstat\nCAL  function calls total 4\n$ "))
	expect("poweroff")
	if err := s.Finished(); err != nil {
		t.Error(err)
	}
	if _, err := NewConsoleScript(con, ScriptStep{Wait: "("}); err == nil {
		t.Error("a bad regexp was accepted")
	}
}
