package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/govmm/govmm/snapshot"
	"github.com/govmm/govmm/vmm"
)

// snapFlags are run's and boot's --snapshot-at and --snapshot-dir: save
// the running VM once, at a moment the user picks, into a directory that
// 'govmm restore' runs again.
type snapFlags struct {
	at  *time.Duration
	dir *string
}

func addSnapFlags(fs *flag.FlagSet) snapFlags {
	return snapFlags{
		at: fs.Duration("snapshot-at", 0, "with --snapshot-dir: snapshot the running VM this long after it starts (the guest pauses for the save, "+
			"then goes on); 'govmm restore DIR' continues from it"),
		dir: fs.String("snapshot-dir", "", "the new (or empty) directory --snapshot-at saves into"),
	}
}

// check refuses half a request and a directory that cannot take a
// snapshot, before anything is built.
func (f snapFlags) check() error {
	switch {
	case *f.dir == "" && *f.at == 0:
		return nil
	case *f.dir == "":
		return fmt.Errorf("--snapshot-at needs --snapshot-dir (where to save)")
	case *f.at <= 0:
		return fmt.Errorf("--snapshot-dir needs --snapshot-at (when to save, e.g. 2s)")
	}
	if ents, err := os.ReadDir(*f.dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("--snapshot-dir %s: not empty (a snapshot goes into a new or empty directory)", *f.dir)
	}
	return checkCreatable("--snapshot-dir", *f.dir)
}

// arm prepares the snapshot's files (before the sandbox, which allows no
// open(2) later) and starts the timer that takes it; the returned stop
// cancels a snapshot not taken yet.
func (f snapFlags) arm(vm *vmm.VM, stderr io.Writer) (stop func(), err error) {
	if *f.dir == "" {
		return func() {}, nil
	}
	if err := vm.CheckSnapshot(); err != nil {
		return nil, err
	}
	w, err := snapshot.Prepare(*f.dir, vm.SnapshotFiles())
	if err != nil {
		return nil, err
	}
	t := time.AfterFunc(*f.at, func() {
		info, err := vm.SnapshotInto(w, *f.dir, version())
		if err != nil {
			fmt.Fprintf(stderr, "govmm: --snapshot-at %v: %v\n", *f.at, err)
			return
		}
		fmt.Fprintf(stderr, "govmm: snapshot at %v into %s: %.1f MiB (guest memory sparse), the guest paused %v; 'govmm restore %s' continues from it\n",
			*f.at, info.Dir, float64(info.Bytes)/(1<<20), info.Took.Round(time.Millisecond), info.Dir)
	})
	return func() {
		if t.Stop() {
			w.Close()
		}
	}, nil
}
