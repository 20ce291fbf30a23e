// Command ipibench runs govmm's in-kernel IPI microbenchmark or IPI storm
// from user space (it is in govmm's u-root initramfs) and prints the
// kernel's results: cycles per operation and, counted by govmm, exits per
// operation and per IPI (guest/linux/patches/0003).
//
//	ipibench [-n N]          unicast round trips, call-function on all, flush_tlb_all
//	ipibench -storm [-n N]   every CPU sends N calls to the others at once
//
// The same runs start from the kernel command line (govmm.ipibench=N,
// govmm.ipistorm=N) on hosts where user space cannot run.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// sysDir is where govmm's kernel patch puts its controls.
var sysDir = "/sys/kernel/govmm"

func main() {
	n := flag.Uint("n", 1000, "operations of each kind (storm: calls per CPU)")
	storm := flag.Bool("storm", false, "run the IPI storm instead of the microbenchmark")
	flag.Parse()
	out, err := run(*storm, *n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ipibench:", err)
		os.Exit(1)
	}
	fmt.Print(out)
}

// run writes n to the control file and returns what the kernel reports.
func run(storm bool, n uint) (string, error) {
	if n == 0 {
		return "", fmt.Errorf("-n must be at least 1")
	}
	name := "ipibench"
	if storm {
		name = "ipistorm"
	}
	path := filepath.Join(sysDir, name)
	f, err := os.OpenFile(path, os.O_WRONLY, 0) // never create: it is the kernel's
	if os.IsNotExist(err) {
		return "", fmt.Errorf("%s is missing: this is not govmm's guest kernel (guest/linux)", path)
	}
	if err != nil {
		return "", err
	}
	// The write returns when the run is over.
	_, err = f.WriteString(strconv.FormatUint(uint64(n), 10))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
