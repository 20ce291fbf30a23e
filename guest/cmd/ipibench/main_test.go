package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: the command writes N to the right control file and prints what
// reading it gives (a fake sysfs directory stands in for the kernel).
func TestRun(t *testing.T) {
	sysDir = t.TempDir()
	for _, name := range []string{"ipibench", "ipistorm"} {
		if err := os.WriteFile(filepath.Join(sysDir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(true, 250)
	if err != nil {
		t.Fatal(err)
	}
	if out != "250" {
		t.Errorf("storm run read back %q, want the written 250 (the fake kernel echoes)", out)
	}
	if b, _ := os.ReadFile(filepath.Join(sysDir, "ipibench")); len(b) != 0 {
		t.Errorf("-storm wrote to ipibench: %q", b)
	}
	if _, err := run(false, 0); err == nil {
		t.Error("-n 0 accepted")
	}
	os.Remove(filepath.Join(sysDir, "ipibench"))
	if _, err := run(false, 5); err == nil || !strings.Contains(err.Error(), "not govmm's guest kernel") {
		t.Errorf("missing control file: err %v", err)
	}
}
