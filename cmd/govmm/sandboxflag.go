package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"

	"github.com/govmm/govmm/sandbox"
)

// sandboxFlags are --sandbox and --user (package sandbox).
type sandboxFlags struct {
	mode *string
	user *string
}

func addSandboxFlags(fs *flag.FlagSet) sandboxFlags {
	return sandboxFlags{
		mode: fs.String("sandbox", "on", "once the VM is built, confine govmm to the system calls a running VM needs (seccomp allowlist on every thread; see package sandbox): on or off"),
		user: fs.String("user", "", "run the VM as this user (dropped to after the VM is built, before the sandbox)"),
	}
}

// check refuses a bad --sandbox or --user before anything is built.
func (f sandboxFlags) check() error {
	switch *f.mode {
	case "on", "off":
	default:
		return fmt.Errorf("--sandbox %q: want on or off", *f.mode)
	}
	if *f.user == "" {
		return nil
	}
	if *f.mode == "off" {
		return fmt.Errorf("--user %s needs --sandbox on", *f.user)
	}
	if _, err := user.Lookup(*f.user); err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return fmt.Errorf("--user %s: no such user", *f.user)
		}
		return fmt.Errorf("--user %s: %v", *f.user, err)
	}
	return nil
}

// install confines govmm as asked, saying so in one line.
func (f sandboxFlags) install(stderr io.Writer) error {
	if err := f.check(); err != nil {
		return err
	}
	if *f.mode == "off" {
		return nil
	}
	r, err := sandbox.Install(sandbox.Options{User: *f.user})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "govmm: sandbox: %s\n", r)
	return nil
}
