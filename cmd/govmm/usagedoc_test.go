package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The usage has one source, the commands' own flag sets: docs/flags.md is
// generated from them and the README's usage block is checked against
// them, so neither can drift from 'govmm CMD --help'.

// commandOrder is the order the commands appear in docs/flags.md.
var commandOrder = []string{"boot", "run", "restore", "host", "map", "top", "nested", "bench", "bench-ipi", "bench-rtt", "bench-exits", "bench-seeds"}

// helpText is 'govmm CMD -h', with the defaults that depend on this
// machine's cache directory written as $GOVMM_CACHE.
func helpText(t *testing.T, cmd string) string {
	t.Helper()
	var out bytes.Buffer
	if _, err := commands[cmd]([]string{"-h"}, io.Discard, &out); err != flag.ErrHelp {
		t.Fatalf("govmm %s -h: %v, want flag.ErrHelp", cmd, err)
	}
	return out.String()
}

// flagsDoc renders docs/flags.md.
func flagsDoc(t *testing.T) string {
	t.Setenv("GOVMM_CACHE", "$GOVMM_CACHE")
	t.Setenv("GOVMM_GUEST_DIR", "")
	var b strings.Builder
	b.WriteString("# govmm's commands and their flags\n\n" +
		"Generated from the commands' own flag sets (`UPDATE_USAGE=1 go test ./cmd/govmm -run TestUsageDoc`);\n" +
		"`TestUsageDoc` fails when this file and the flags differ. `govmm help CMD` prints the same.\n" +
		"What the commands do: [usage.md](usage.md).\n")
	for _, cmd := range commandOrder {
		b.WriteString("\n## govmm " + cmd + "\n\n```text\n" + helpText(t, cmd) + "```\n")
	}
	return b.String()
}

// TestUsageDoc: docs/flags.md is what the flag sets say, and lists every
// command.
func TestUsageDoc(t *testing.T) {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	order := slices.Clone(commandOrder)
	slices.Sort(order)
	if !slices.Equal(names, order) {
		t.Fatalf("commandOrder %v does not list the commands %v", commandOrder, names)
	}
	want := flagsDoc(t)
	const path = "../../docs/flags.md"
	if os.Getenv("UPDATE_USAGE") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/flags.md differs from the commands' flags: regenerate it with UPDATE_USAGE=1 go test ./cmd/govmm -run TestUsageDoc")
	}
}

// TestREADMEUsage: every command is in the README's usage block, and every
// flag the block names exists on that command.
func TestREADMEUsage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Usage\n.*?```\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no ## Usage section with a ``` block")
	}
	seen := map[string]bool{}
	cmd := ""
	for _, line := range strings.Split(string(block[1]), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "govmm" {
			cmd = f[1]
			if cmd == "help" {
				cmd = "" // govmm help CMD | govmm --version: main's own
				continue
			}
			if commands[cmd] == nil {
				t.Errorf("README usage: %q is not a command", cmd)
				continue
			}
			seen[cmd] = true
		}
		if cmd == "" || commands[cmd] == nil {
			continue
		}
		help := helpText(t, cmd)
		for _, m := range regexp.MustCompile(`\[--?([a-z][a-z0-9-]*)`).FindAllStringSubmatch(line, -1) {
			if !strings.Contains(help, "\n  -"+m[1]+" ") && !strings.Contains(help, "\n  -"+m[1]+"\n") {
				t.Errorf("README usage: govmm %s has no flag --%s", cmd, m[1])
			}
		}
	}
	for n := range commands {
		if !seen[n] {
			t.Errorf("README usage block lacks govmm %s", n)
		}
	}
}
