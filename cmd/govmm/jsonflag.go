package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"strconv"
)

// jsonFlag is --json on host and map, whose output is only the answer:
// bare, the JSON replaces the text on stdout; --json=FILE writes it to FILE
// instead, as run's and boot's --json FILE does (their stdout is the
// guest's console, so there FILE is needed).
type jsonFlag struct {
	on   bool
	path string
}

func addJSONFlag(fs *flag.FlagSet, what string) *jsonFlag {
	j := &jsonFlag{}
	fs.Var(j, "json", "print "+what+" as JSON on stdout; --json=FILE writes it to FILE (as run's and boot's --json FILE)")
	return j
}

func (j *jsonFlag) IsBoolFlag() bool { return true }

func (j *jsonFlag) String() string {
	if j == nil || !j.on {
		return ""
	}
	return j.path
}

func (j *jsonFlag) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		j.on, j.path = b, ""
		return nil
	}
	j.on, j.path = true, s
	return nil
}

// check refuses a FILE that cannot be created, before anything runs.
func (j *jsonFlag) check() error { return checkCreatable("--json", j.path) }

// write writes v as indented JSON to stdout or FILE.
func (j *jsonFlag) write(stdout io.Writer, v any) error {
	w := stdout
	if j.path != "" {
		f, err := os.Create(j.path)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
