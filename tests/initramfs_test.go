package tests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/u-root/u-root/pkg/cpio"
)

// TestInitramfsContent lists the u-root initramfs the Makefile built and
// checks it holds init, a shell and govmm's guest programs.
func TestInitramfsContent(t *testing.T) {
	path := filepath.Join(cacheDir(), "initramfs.cpio")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("initramfs not built (run 'make initramfs'): %v", err)
	}
	defer f.Close()
	recs, err := cpio.ReadAllRecords(cpio.Newc.Reader(f))
	if err != nil {
		t.Fatalf("%s is not a newc cpio archive: %v", path, err)
	}
	have := map[string]cpio.Record{}
	for _, r := range recs {
		have[r.Name] = r
	}
	for _, want := range []string{"init", "bbin/init", "bbin/gosh", "bin/sh", "bbin/shutdown", "bbin/poweroff", "bbin/dmesg", "bbin/irqstat", "bbin/ipibench", "bbin/ustress", "dev/console"} {
		if _, ok := have[want]; !ok {
			t.Errorf("initramfs lacks %s", want)
		}
	}
	if r, ok := have["bbin/bb"]; !ok || r.FileSize < 1<<20 {
		t.Errorf("initramfs has no u-root busybox binary (bbin/bb)")
	}
}
