package main

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"
)

// TestLineHandler: a library's report reads as govmm's own line, with
// its attributes, and a multi-line value follows as a block.
func TestLineHandler(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(newLineHandler(&b))
	l.Warn("virtio-blk: queue notifies will exit to user space", "err", errors.New("no space left"))
	l.With("cpu", 3).Error("vCPU 3 did not leave the guest", "state", "RIP 0x1000\nIF 1\n")
	l.Debug("not shown")
	want := "govmm: virtio-blk: queue notifies will exit to user space err=no space left\n" +
		"govmm: vCPU 3 did not leave the guest cpu=3\nstate:\nRIP 0x1000\nIF 1\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}
