package main

import (
	"fmt"
	"runtime/debug"
)

// version is 'govmm --version': the module's version ("(devel)" for a
// build from a work tree), the VCS revision and time the build info
// records (with "+modified" when the tree had uncommitted changes) and the
// Go toolchain. What is unknown (a binary built without VCS stamping) is
// said, not left out.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "govmm: no build information (not built with module support)"
	}
	rev, when, modified := "unknown", "", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	return fmt.Sprintf("govmm %s, revision %s%s%s, %s", bi.Main.Version, rev, modified, when, bi.GoVersion)
}
