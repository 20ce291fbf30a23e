package linuxguest

import "testing"

// TestConsoleMilestones: milestones are recognised in complete lines, in
// order of arrival, each once; the shell prompt, which has no newline, is
// recognised in the line being written, even when the bytes come apart.
func TestConsoleMilestones(t *testing.T) {
	c := NewConsole(nil, BootMilestones)
	for _, chunk := range []string{
		"[    0.000000] Linux version 6.1\n",
		"[   50.2] Run /init as init process\n[   50.3] Run /init as init process\n",
		"2026/11/30 Welcome to u-root!\n",
		"echo $ not a prompt\n", // a "$ " inside a complete line is not the prompt
		"init: ok\n$", " ",
	} {
		c.Write([]byte(chunk))
	}
	var got []string
	for _, p := range c.Reached() {
		got = append(got, p.Name)
	}
	want := []string{"first console line", "/init started", "u-root init", "u-root shell"}
	if len(got) != len(want) {
		t.Fatalf("reached %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reached %q, want %q", got, want)
		}
	}
	if d, _, ok := UserStartup(c.Reached()); !ok || d <= 0 {
		t.Errorf("UserStartup = %v, %v: /init and the prompt were both reached", d, ok)
	}
	if _, _, ok := UserStartup(c.Reached()[:2]); ok {
		t.Error("UserStartup ok without the prompt")
	}
	if c.Log() == "" {
		t.Error("log lost")
	}
}
