package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/govmm/govmm/snapshot"
	"github.com/govmm/govmm/vmm"
)

// snapFlags are run's and boot's --snapshot-at and --snapshot-dir: save
// the running VM once, into a directory that 'govmm restore' runs again,
// at a moment the user picks: after --snapshot-at, on SIGPWR, or on the
// dashboard's POST /api/v1/control/snapshot, whichever comes first.
type snapFlags struct {
	at  *time.Duration
	dir *string
}

func addSnapFlags(fs *flag.FlagSet) snapFlags {
	return snapFlags{
		at: fs.Duration("snapshot-at", 0, "with --snapshot-dir: snapshot the running VM this long after it starts (the guest pauses for the save, "+
			"then goes on); 'govmm restore DIR' continues from it"),
		dir: fs.String("snapshot-dir", "", "the new (or empty) directory to save one snapshot into: at --snapshot-at, on SIGPWR, or on the dashboard's "+
			"POST /api/v1/control/snapshot, whichever comes first"),
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
	}
	if ents, err := os.ReadDir(*f.dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("--snapshot-dir %s: not empty (a snapshot goes into a new or empty directory)", *f.dir)
	}
	return checkCreatable("--snapshot-dir", *f.dir)
}

// snapTaker takes the one snapshot --snapshot-dir armed, on the first of
// its requests (the timer, SIGPWR, the control endpoint); later ones are
// refused, saying where it went.
type snapTaker struct {
	vm  *vmm.VM
	dir string
	w   *snapshot.Writer

	mu    sync.Mutex
	taken bool
	err   error // the first attempt's, when it failed
}

// take saves the VM into the armed directory, once.
func (s *snapTaker) take() (vmm.SnapshotInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return vmm.SnapshotInfo{}, fmt.Errorf("the snapshot into %s failed already: %w", s.dir, s.err)
	case s.taken:
		return vmm.SnapshotInfo{}, fmt.Errorf("a snapshot was taken already into %s (--snapshot-dir holds one)", s.dir)
	}
	info, err := s.vm.SnapshotInto(s.w, s.dir, version())
	s.taken, s.err = err == nil, err
	return info, err
}

// close gives the prepared files back if no snapshot was taken.
func (s *snapTaker) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.taken && s.err == nil {
		s.w.Close()
		s.err = errors.New("the VM ended")
	}
}

// arm prepares the snapshot's files (before the sandbox, which allows no
// open(2) later) and its requests: the timer, SIGPWR. The returned take
// (nil without --snapshot-dir) is the dashboard's; stop cancels a snapshot
// not taken yet.
func (f snapFlags) arm(vm *vmm.VM, stderr io.Writer) (take func() (vmm.SnapshotInfo, error), stop func(), err error) {
	if *f.dir == "" {
		return nil, func() {}, nil
	}
	w, err := snapshot.Prepare(*f.dir, vm.SnapshotFiles())
	if err != nil {
		return nil, nil, err
	}
	s := &snapTaker{vm: vm, dir: *f.dir, w: w}
	report := func(why string) {
		info, err := s.take()
		if err != nil {
			fmt.Fprintf(stderr, "govmm: snapshot %s: %v\n", why, err)
			return
		}
		fmt.Fprintf(stderr, "govmm: snapshot %s into %s: %.1f MiB (guest memory sparse), the guest paused %v; 'govmm restore %s' continues from it\n",
			why, info.Dir, float64(info.Bytes)/(1<<20), info.Took.Round(time.Millisecond), info.Dir)
	}
	var t *time.Timer
	if *f.at > 0 {
		t = time.AfterFunc(*f.at, func() { report(fmt.Sprintf("at %v", *f.at)) })
	}
	sigs := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sigs, syscall.SIGPWR)
	go func() {
		for {
			select {
			case <-sigs:
				report("on SIGPWR")
			case <-done:
				return
			}
		}
	}()
	return s.take, func() {
		signal.Stop(sigs)
		close(done)
		if t != nil {
			t.Stop()
		}
		s.close()
	}, nil
}
