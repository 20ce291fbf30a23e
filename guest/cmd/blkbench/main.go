// Command blkbench measures govmm's virtio-blk path from inside the guest
// (it is in govmm's u-root initramfs): on every online CPU at once it does
// random O_DIRECT reads and/or writes on a block device, brackets the run
// with govmm's accounting port (0x660, devices/marker.go) and prints the
// exits govmm counted and the interrupts each virtio block queue delivered
// to each CPU.
//
//	blkbench [-dev /dev/vda] [-n 1000] [-depth 1] [-rw read] [-bs 4096] [-offset BYTES] [-size BYTES]
//	blkbench -rw write|both -offset BYTES -size BYTES [...]
//
// Each online CPU gets -depth OS threads pinned to it (LockOSThread +
// sched_setaffinity), each keeping one request in flight at a time: -depth
// requests per CPU, on the CPU's own blk-mq queue. Each thread does -n
// requests of -bs bytes (a multiple of 4096) at random 4 KiB-aligned
// offsets within [-offset, -offset + -size) of the device; -rw both
// alternates reads and writes. Reads default to the whole device from
// -offset; writes need -offset and -size both given, so that a test names
// a scratch area outside any filesystem on the disk.
//
// Output, one item per line, every line starting with "blkbench: ":
//
//	blkbench: dev /dev/vda rw read bs 4096 depth 32 cpus 2 threads 64 offset 0 size 67108864
//	blkbench: requests 64000
//	blkbench: reads 64000
//	blkbench: writes 0
//	blkbench: seconds 2.104
//	blkbench: iops 30418
//	blkbench: exits 70512            (IN 0x660: all vCPUs, the whole run)
//	blkbench: exits/io 1.102
//	blkbench: ipis-delivered 120     (IN 0x668)
//	blkbench: ipis-sent 120          (IN 0x66C)
//	blkbench: irq-exits 64010        (IN 0x674: exits the device's MSIs
//	                                  caused their receivers: wake, kick,
//	                                  window, EOI)
//	blkbench: irq-exits/io 1.000
//	blkbench: interrupts 64010       (all virtio block queues, all CPUs)
//	blkbench: interrupts/io 1.000
//	blkbench: cpu 0 interrupts 32005
//	blkbench: cpu 0 irq 25 virtio0-req.0 32005
//	blkbench: cpu 1 interrupts 32005
//	blkbench: cpu 1 irq 26 virtio0-req.1 32005
//
// "cpu C interrupts" is printed for every online CPU, "cpu C irq I QUEUE"
// for every queue interrupt that CPU took at least once during the run
// (/proc/interrupts rows whose action is virtioN-req.Q, of the device's
// virtio device when /sys/class/block/DEV/device names it, read before and
// after the run), and "cpu C other irq I ACTION N" for every other
// numbered row (another device's interrupt) that CPU took. Without the accounting port (ioperm fails: not govmm's
// kernel, or no CAP_SYS_RAWIO) blkbench says so on stderr, runs anyway and
// prints "exits n/a" instead of the six marker lines.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/govmm/govmm/guest/internal/procirq"
	"golang.org/x/sys/unix"
)

// align is the offset granularity, and what -bs and -offset must be
// multiples of (O_DIRECT needs the logical block size; 4 KiB covers it).
const align = 4096

// config is what the flags ask for.
type config struct {
	dev         string
	n           int
	depth       int
	rw          string
	bs          int64
	offset      int64
	size        int64
	marker      bool
	offsetGiven bool
	sizeGiven   bool
}

func (c *config) writes() bool { return c.rw != "read" }

// parseArgs reads the flags (without the command name).
func parseArgs(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("blkbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.dev, "dev", "/dev/vda", "block device")
	fs.IntVar(&c.n, "n", 1000, "requests per thread")
	fs.IntVar(&c.depth, "depth", 1, "threads per CPU, each with one request in flight (usually 1 or 32)")
	fs.StringVar(&c.rw, "rw", "read", "read, write or both (alternating)")
	fs.Int64Var(&c.bs, "bs", align, "bytes per request, a multiple of 4096")
	fs.Int64Var(&c.offset, "offset", 0, "start of the region, bytes, a multiple of 4096 (needed for writes)")
	fs.BoolVar(&c.marker, "marker", true, "read govmm's counts through its accounting port (only in a govmm guest: -marker=false anywhere else, where port 0x660 is not govmm's)")
	fs.Int64Var(&c.size, "size", 0, "length of the region, bytes (needed for writes; reads: default the rest of the device)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "offset":
			c.offsetGiven = true
		case "size":
			c.sizeGiven = true
		}
	})
	switch {
	case c.n < 1:
		return nil, errors.New("-n must be at least 1")
	case c.depth < 1 || c.depth > 1024:
		return nil, errors.New("-depth must be 1 to 1024")
	case c.rw != "read" && c.rw != "write" && c.rw != "both":
		return nil, fmt.Errorf("-rw %q: want read, write or both", c.rw)
	case c.bs < align || c.bs%align != 0 || c.bs > 1<<20:
		return nil, fmt.Errorf("-bs %d: want a multiple of %d up to 1 MiB", c.bs, align)
	case c.offset < 0 || c.offset%align != 0:
		return nil, fmt.Errorf("-offset %d: want a multiple of %d, at least 0", c.offset, align)
	case c.sizeGiven && c.size < c.bs:
		return nil, fmt.Errorf("-size %d is less than one request (-bs %d)", c.size, c.bs)
	case c.writes() && (!c.offsetGiven || !c.sizeGiven):
		return nil, fmt.Errorf("-rw %s writes to the device: give the scratch region with both -offset and -size", c.rw)
	}
	return c, nil
}

// region fixes the size against the device's: the rest of the device
// when not given, and never past its end.
func (c *config) region(devSize int64) error {
	if !c.sizeGiven {
		c.size = devSize - c.offset
	}
	if c.offset+c.size > devSize || c.size < c.bs {
		return fmt.Errorf("%s has %d bytes: no room for -offset %d -size %d with -bs %d", c.dev, devSize, c.offset, c.size, c.bs)
	}
	return nil
}

// slots is how many 4 KiB-aligned request offsets the region has.
func (c *config) slots() int64 { return (c.size-c.bs)/align + 1 }

// parseCPUList reads a kernel CPU list ("0-3,8,10-11").
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty CPU list")
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("CPU list %q: bad %q", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: bad %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// queueName returns the virtio block queue a /proc/interrupts row is for
// ("virtio0-req.1": the description's last word), or "" for other rows.
// With virtio non-empty ("virtio0"), only that device's queues count.
func queueName(desc, virtio string) string {
	act := lastWord(desc)
	dev, q, ok := strings.Cut(act, "-req.")
	if !ok || !strings.HasPrefix(dev, "virtio") || q == "" {
		return ""
	}
	if virtio != "" && dev != virtio {
		return ""
	}
	return act
}

// result is what a run measured.
type result struct {
	cfg     *config
	cpus    int
	reads   int64
	writes  int64
	elapsed time.Duration
	marks   *markCounts    // nil: no accounting port
	irqs    *procirq.Table // after minus before
	virtio  string         // the device's virtio name, "" if unknown
}

// report formats a result, one item per line.
func report(r *result) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, "blkbench: "+format+"\n", a...) }
	c := r.cfg
	p("dev %s rw %s bs %d depth %d cpus %d threads %d offset %d size %d", c.dev, c.rw, c.bs, c.depth, r.cpus, r.cpus*c.depth, c.offset, c.size)
	ios := r.reads + r.writes
	p("requests %d", ios)
	p("reads %d", r.reads)
	p("writes %d", r.writes)
	p("seconds %.3f", r.elapsed.Seconds())
	if s := r.elapsed.Seconds(); s > 0 {
		p("iops %.0f", float64(ios)/s)
	} else {
		p("iops 0")
	}
	per := func(n uint64) float64 {
		if ios == 0 {
			return 0
		}
		return float64(n) / float64(ios)
	}
	if m := r.marks; m != nil {
		p("exits %d", m.exits)
		p("exits/io %.3f", per(m.exits))
		p("ipis-delivered %d", m.delivered)
		p("ipis-sent %d", m.sent)
		p("irq-exits %d", m.irqExits)
		p("irq-exits/io %.3f", per(m.irqExits))
	} else {
		p("exits n/a")
	}
	if r.irqs == nil {
		return b.String()
	}
	type hit struct {
		irq, queue string
		n          uint64
	}
	percpu := make([][]hit, len(r.irqs.CPUs))
	others := make([][]hit, len(r.irqs.CPUs))
	var total uint64
	for _, row := range r.irqs.Rows {
		q := queueName(row.Desc, r.virtio)
		if q == "" {
			// Another device's interrupt (a numbered row) on a CPU
			// during the run: govmm's injections into that vCPU hold it
			// too, so a comparison needs it named.
			if _, err := strconv.Atoi(row.Name); err == nil {
				for i, n := range row.PerCPU {
					if n > 0 {
						others[i] = append(others[i], hit{row.Name, lastWord(row.Desc), n})
					}
				}
			}
			continue
		}
		for i, n := range row.PerCPU {
			if n > 0 {
				percpu[i] = append(percpu[i], hit{row.Name, q, n})
				total += n
			}
		}
	}
	p("interrupts %d", total)
	p("interrupts/io %.3f", per(total))
	for i, cpu := range r.irqs.CPUs {
		var sum uint64
		for _, h := range percpu[i] {
			sum += h.n
		}
		p("cpu %d interrupts %d", cpu, sum)
		for _, h := range percpu[i] {
			p("cpu %d irq %s %s %d", cpu, h.irq, h.queue, h.n)
		}
		for _, h := range others[i] {
			p("cpu %d other irq %s %s %d", cpu, h.irq, h.queue, h.n)
		}
	}
	return b.String()
}

// lastWord is a /proc/interrupts description's last word, its action
// ("ttyS0", "virtio1-input.0"), or "?" for none.
func lastWord(desc string) string {
	f := strings.Fields(desc)
	if len(f) == 0 {
		return "?"
	}
	return f[len(f)-1]
}

func main() {
	c, err := parseArgs(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "usage: blkbench [-dev /dev/vda] [-n N] [-depth 1|32] [-rw read|write|both] [-bs 4096] [-offset BYTES] [-size BYTES]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "blkbench:", err)
		os.Exit(2)
	}
	r, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "blkbench:", err)
		os.Exit(1)
	}
	fmt.Print(report(r))
}

// virtioName is the virtio device under a block device ("virtio0"), or "".
func virtioName(dev string) string {
	l, err := os.Readlink(filepath.Join("/sys/class/block", filepath.Base(dev), "device"))
	if err != nil {
		return ""
	}
	if b := filepath.Base(l); strings.HasPrefix(b, "virtio") {
		return b
	}
	return ""
}

func readIRQs() (*procirq.Table, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return nil, err
	}
	return procirq.Parse(string(b))
}

// run does the I/O on every online CPU and measures it.
func run(c *config) (*result, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	cpus, err := parseCPUList(string(b))
	if err != nil {
		return nil, err
	}
	mode := unix.O_RDONLY
	if c.writes() {
		mode = unix.O_RDWR
	}
	fd, err := unix.Open(c.dev, mode|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", c.dev, err)
	}
	defer unix.Close(fd)
	devSize, err := unix.Seek(fd, 0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("%s: size: %w", c.dev, err)
	}
	if err := c.region(devSize); err != nil {
		return nil, err
	}

	// The accounting port is this thread's (ioperm): stay on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var m *marker
	if c.marker {
		var err error
		if m, err = openMarker(); err != nil {
			fmt.Fprintf(os.Stderr, "blkbench: %v: running without govmm's counts\n", err)
			m = nil
		}
	}

	// Every worker thread blocks in pread/pwrite: give each its own P so
	// that a completed request never waits for one to issue the next.
	threads := len(cpus) * c.depth
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), threads+1))
	debug.SetMaxThreads(max(10000, 2*threads+100))

	var (
		ready, done sync.WaitGroup
		start       = make(chan struct{})
		reads       atomic.Int64
		writes      atomic.Int64
		stop        atomic.Bool
		errOnce     sync.Once
		firstErr    error
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err })
		stop.Store(true)
	}
	for _, cpu := range cpus {
		for t := range c.depth {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				err := worker(c, fd, cpu, t, &ready, start, &stop, &reads, &writes)
				if err != nil {
					fail(err)
				}
			}()
		}
	}
	ready.Wait() // all pinned, buffers mapped
	before, err := readIRQs()
	if err != nil {
		stop.Store(true)
		close(start)
		done.Wait()
		return nil, err
	}
	if m != nil {
		m.open()
	}
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	var marks *markCounts
	if m != nil {
		m.close()
		mc := m.counts()
		marks = &mc
	}
	if firstErr != nil {
		return nil, firstErr
	}
	after, err := readIRQs()
	if err != nil {
		return nil, err
	}
	diff, err := procirq.Diff(before, after)
	if err != nil {
		return nil, err
	}
	return &result{cfg: c, cpus: len(cpus), reads: reads.Load(), writes: writes.Load(), elapsed: elapsed,
		marks: marks, irqs: diff, virtio: virtioName(c.dev)}, nil
}

// worker is thread t of cpu: pinned to it, c.n requests, one at a time.
func worker(c *config, fd, cpu, t int, ready *sync.WaitGroup, start <-chan struct{}, stop *atomic.Bool, reads, writes *atomic.Int64) error {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	var set unix.CPUSet
	set.Set(cpu)
	err := unix.SchedSetaffinity(0, &set)
	var buf []byte
	if err == nil {
		// O_DIRECT needs an aligned buffer: a fresh mapping is page aligned.
		buf, err = unix.Mmap(-1, 0, int(c.bs), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	}
	ready.Done()
	if err != nil {
		return fmt.Errorf("CPU %d thread %d: %w", cpu, t, err)
	}
	defer unix.Munmap(buf)
	for i := range buf {
		buf[i] = byte(cpu*31 + t + i)
	}
	rng := rand.New(rand.NewPCG(uint64(cpu), uint64(t)))
	slots := c.slots()
	<-start
	for i := 0; i < c.n && !stop.Load(); i++ {
		off := c.offset + rng.Int64N(slots)*align
		write := c.rw == "write" || (c.rw == "both" && i%2 == 1)
		var n int
		var err error
		if write {
			n, err = unix.Pwrite(fd, buf, off)
		} else {
			n, err = unix.Pread(fd, buf, off)
		}
		if err == nil && n != len(buf) {
			err = fmt.Errorf("%d of %d bytes", n, len(buf))
		}
		if err != nil {
			op := "read"
			if write {
				op = "write"
			}
			return fmt.Errorf("CPU %d thread %d: %s at %d: %w", cpu, t, op, off, err)
		}
		if write {
			writes.Add(1)
		} else {
			reads.Add(1)
		}
	}
	return nil
}
