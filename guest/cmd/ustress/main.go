// Command ustress checks that guest user space keeps its memory and
// registers intact while the kernel under it is busy: it is how the rare Go
// runtime crashes in u-root's init on the emulating host (docs/hosts.md)
// were reproduced and traced to govmm's own noxsave boots, not the host.
// It is in govmm's u-root initramfs.
//
//	ustress [-t 30s] [-g 3×CPUs] [-children 2] [-work recurse,buffer,copy,memmove,xmm,ymm,zmm,gpr,zap] [-copy memmove]
//
// For -t it runs -g goroutines (by default 3 per CPU and at least 8), with
// as many threads running Go code so that the kernel switches between
// threads that hold registers, each doing the -work items in turn:
//
//   - recurse: recursion to random depths (so stacks grow and are copied,
//     and shrink again at GC), each frame holding a value derived from its
//     depth that is checked on the way back;
//   - buffer: a heap buffer of a pattern, checked after the next GC;
//   - copy: a copy into freshly mapped pages (a page fault in the copy);
//   - memmove: Go's copy() at sizes and places that take each path of the
//     runtime's memmove (which uses AVX where the CPU has it) within one
//     buffer, checked byte by byte;
//   - xmm, ymm, zmm, gpr: random values held in XMM0-14, YMM0-15 (all 256
//     bits), ZMM0-31 and the opmasks K1-K7, and the general registers, for
//     millions of rounds of checks, across timer interrupts, signals and
//     context switches. ymm needs AVX and zmm AVX-512F, enabled in XCR0
//     (as Go's runtime checks before it uses them); without, they do not
//     run and the summary says "n/a". FXSAVE, all a noxsave kernel saves,
//     covers only the XMM part;
//   - zap: pages discarded with MADV_DONTNEED, which must read as zero.
//
// Beside them, -children loops each start ustress itself as a short-lived
// child process and check its exit status (fork, exec, page faults, copy
// on write and TLB shootdowns across the CPUs). The Go runtime preempts
// the goroutines with signals all the while.
//
// It prints one line: "ustress: ok ..." with what it did, or the first
// mismatch ("ustress: CORRUPT ...") and exits 1; a copy that differs is
// shown 16 bytes at a time (a lost upper half of a vector register is such
// a chunk). Memory corruption that hits the runtime first shows as a Go
// fatal error instead.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	d := flag.Duration("t", 30*time.Second, "how long to run")
	g := flag.Int("g", max(8, 3*runtime.NumCPU()), "goroutines doing the work (and at least as many threads running Go code)")
	children := flag.Int("children", 2, "loops that start a child ustress and wait for it")
	child := flag.Bool("child", false, "run as a child: a short run, no children")
	flag.IntVar(&maxDepth, "depth", maxDepth, "deepest recursion of the recurse work, in frames (136 bytes each)")
	flag.IntVar(&copyPages, "copy-pages", copyPages, "largest copy of the copy work, and area of the zap work, in pages")
	flag.StringVar(&copyHow, "copy", copyHow, "how copy work copies, of "+strings.Join(copyModes, ", "))
	all := strings.Join(workItems, ",")
	work := flag.String("work", all, "what the goroutines do, of "+all)
	flag.Parse()
	if !slices.Contains(copyModes, copyHow) {
		fmt.Fprintf(os.Stderr, "ustress: -copy: unknown %q (%s)\n", copyHow, strings.Join(copyModes, ", "))
		os.Exit(2)
	}
	clear(doing)
	for _, w := range strings.Split(*work, ",") {
		if !slices.Contains(workItems, w) {
			fmt.Fprintf(os.Stderr, "ustress: -work: unknown %q (%s)\n", w, strings.Join(workItems, ", "))
			os.Exit(2)
		}
		doing[w] = true
	}
	if *g < 1 || *children < 0 || *d <= 0 || copyPages < 1 || maxDepth < 1 {
		fmt.Fprintln(os.Stderr, "ustress: -t must be positive, -g, -depth and -copy-pages at least 1, -children at least 0")
		os.Exit(2)
	}
	if *child {
		*d, *children = 200*time.Millisecond, 0
	}
	// Goroutines are not threads: with GOMAXPROCS at the CPU count, Go
	// switches them at its own safe points (never inside a hold) and the
	// kernel rarely switches between two threads that hold registers.
	// More running threads than CPUs make it time-slice them.
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), *g))
	s := run(*d, *g, *children)
	if s.err != nil {
		fmt.Println("ustress: CORRUPT", s.err)
		os.Exit(1)
	}
	if !*child {
		fmt.Println(s.summary(*d, *g))
	}
}

// summary is the line of a run that found nothing: what it did. A vector
// hold the CPU (or the kernel) does not allow says so instead of a count.
func (s *stats) summary(d time.Duration, g int) string {
	ymm := fmt.Sprintf("%d YMM holds", s.ymm.Load())
	if doing["ymm"] && !haveYMM {
		ymm = "ymm n/a (no AVX)"
	}
	zmm := fmt.Sprintf("%d ZMM holds", s.zmm.Load())
	if doing["zmm"] && !haveZMM {
		zmm = "zmm n/a (no AVX-512F)"
	}
	return fmt.Sprintf("ustress: ok %v on %d CPUs, %d goroutines: %d recursions (deepest %d frames), %d buffers, %d copies to fresh pages, %d memmoves, %d XMM holds, %s, %s, %d register holds, %d discards, %d GCs, %d children",
		d, runtime.NumCPU(), g, s.recursions.Load(), s.deepest.Load(), s.buffers.Load(), s.copies.Load(), s.moves.Load(), s.xmm.Load(), ymm, zmm, s.gpr.Load(), s.zaps.Load(), s.gcs.Load(), s.children.Load())
}

// copyHow, copyPages and maxDepth are -copy, -copy-pages and -depth, with
// their defaults also for run called without flags (the tests); copyModes
// are what -copy can name.
var (
	copyModes = []string{"memmove", "prefault", "loop"}
	copyHow   = copyModes[0]
	copyPages = 32
	maxDepth  = 3000
)

// workItems are what -work can name; doing holds the ones it names (all of
// them for run called without flags).
var (
	workItems = []string{"recurse", "buffer", "copy", "memmove", "xmm", "ymm", "zmm", "gpr", "zap"}
	doing     = func() map[string]bool {
		m := map[string]bool{}
		for _, w := range workItems {
			m[w] = true
		}
		return m
	}()
)

type stats struct {
	recursions, deepest, buffers, gcs, children, copies, moves, xmm, ymm, zmm, gpr, zaps atomic.Int64

	mu  sync.Mutex
	err error
}

func (s *stats) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = fmt.Errorf(format, args...)
	}
}

func (s *stats) failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil
}

func run(d time.Duration, g, children int) *stats {
	s := &stats{}
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
			for time.Now().Before(end) && !s.failed() {
				if doing["recurse"] {
					depth := 1 + rng.IntN(maxDepth)
					seed := rng.Uint64()
					if got, want := recurse(depth, seed), expect(depth, seed); got != want {
						s.fail("recursion of %d frames: sum %#x, want %#x", depth, got, want)
					}
					s.recursions.Add(1)
					if int64(depth) > s.deepest.Load() {
						s.deepest.Store(int64(depth))
					}
				}
				if doing["buffer"] {
					buffer(s, rng)
				}
				if doing["copy"] {
					freshCopy(s, rng)
				}
				if doing["memmove"] {
					moveCheck(s, rng, goCopy)
				}
				if doing["xmm"] {
					xmmCheck(s, rng)
				}
				if doing["ymm"] && haveYMM {
					ymmCheck(s, rng)
				}
				if doing["zmm"] && haveZMM {
					zmmCheck(s, rng)
				}
				if doing["gpr"] {
					gprCheck(s, rng)
				}
				if doing["zap"] {
					zapCheck(s, rng)
				}
			}
		}()
	}
	for range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) && !s.failed() {
				// Under u-root's busybox the binary serves every command
				// by the name in argv[0]: keep ours.
				cmd := exec.Command("/proc/self/exe", "-child")
				cmd.Args[0] = os.Args[0]
				out, err := cmd.CombinedOutput()
				if err != nil {
					s.fail("child: %v: %s", err, out)
				}
				s.children.Add(1)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(end) && !s.failed() {
			time.Sleep(50 * time.Millisecond)
			runtime.GC()
			s.gcs.Add(1)
		}
	}()
	wg.Wait()
	return s
}

// recurse returns a sum over depth frames, each holding a local array that
// must be unchanged when its callee returns.
//
//go:noinline
func recurse(depth int, seed uint64) uint64 {
	var local [8]uint64
	for i := range local {
		local[i] = mix(seed, uint64(depth), uint64(i))
	}
	var below uint64
	if depth > 1 {
		below = recurse(depth-1, seed)
	}
	var sum uint64
	for i := range local {
		if local[i] != mix(seed, uint64(depth), uint64(i)) {
			return ^uint64(0) // cannot be what expect returns for a sane run
		}
		sum += local[i]
	}
	return sum + below
}

// expect is what recurse returns, computed without recursion.
func expect(depth int, seed uint64) uint64 {
	var sum uint64
	for d := 1; d <= depth; d++ {
		for i := range 8 {
			sum += mix(seed, uint64(d), uint64(i))
		}
	}
	return sum
}

func mix(a, b, c uint64) uint64 {
	x := a ^ b*0x9E3779B97F4A7C15 ^ c*0xC2B2AE3D27D4EB4F
	x ^= x >> 31
	x *= 0xBF58476D1CE4E5B9
	return x ^ x>>29
}

// buffer fills a heap buffer, lets a GC happen and checks it.
func buffer(s *stats, rng *rand.Rand) {
	n := 1 + rng.IntN(64<<10)
	b := make([]uint64, n)
	seed := rng.Uint64()
	for i := range b {
		b[i] = mix(seed, uint64(i), 7)
	}
	runtime.Gosched()
	for i := range b {
		if b[i] != mix(seed, uint64(i), 7) {
			s.fail("heap buffer of %d words: word %d is %#x, want %#x", n, i, b[i], mix(seed, uint64(i), 7))
			return
		}
	}
	s.buffers.Add(1)
}

// freshCopy copies a pattern into newly mapped memory, whose pages are not
// present yet: the copy (Go's memmove: REP MOVSQ above 2 KiB, or AVX
// loads and stores where the CPU has AVX) takes a page fault at every
// page, inside REP MOVSQ (which must resume where it stopped) or at a
// store. -copy picks how: memmove (as said), prefault (every page touched
// first: no fault in the copy) or loop (8 bytes at a time in a Go loop: a
// fault between instructions, not inside one). Differences are reported
// in 16-byte chunks (chunkDiff).
func freshCopy(s *stats, rng *rand.Rand) {
	const page = 4096
	n := page * (1 + rng.IntN(copyPages))
	src := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := mix(uint64(i), 3, 5)
		for j := range 8 {
			src[i+j] = byte(v >> (8 * j))
		}
	}
	dst, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		s.fail("mmap %d bytes: %v", n, err)
		return
	}
	defer syscall.Munmap(dst)
	off := rng.IntN(page) &^ 7 // start inside the first page
	switch copyHow {
	case "prefault":
		for i := 0; i < n; i += page {
			dst[i] = 1
		}
		copy(dst[off:], src[:n-off])
	case "loop":
		for i := off; i+8 <= n; i += 8 {
			*(*uint64)(unsafe.Pointer(&dst[i])) = *(*uint64)(unsafe.Pointer(&src[i-off]))
		}
	default:
		copy(dst[off:], src[:n-off])
	}
	if diff := chunkDiff(dst[off:], src[:n-off]); diff != "" {
		s.fail("%s copy of %d bytes to %d fresh pages at offset %d (%#x): %s", copyHow, n-off, n/page, off, off, diff)
		return
	}
	s.copies.Add(1)
}

// moveCheck copies with Go's copy() (the runtime's memmove) within a heap
// buffer of a pattern, at sizes that take each of memmove's paths (SSE
// code up to 256 bytes; above, AVX loops where the CPU has AVX, else SSE
// and REP MOVS; non-temporal stores from 1 MiB; backward when the ends
// overlap that way) and at unaligned places, and checks the whole buffer against
// the pattern moved by a byte loop. memmove holds what it copies in
// vector registers between loads and stores: the upper half of a YMM or
// ZMM register that the kernel did not restore is a 16-byte chunk of
// wrong data, so the differences are reported 16 bytes at a time. move
// is goCopy but in the tests.
func moveCheck(s *stats, rng *rand.Rand, move func(dst, src []byte)) {
	n := moveSize(rng)
	lead := rng.IntN(64) // where the first of the two ends starts
	var from, to int
	var how string
	switch gap := rng.IntN(64); {
	case n > 1 && rng.IntN(4) == 0: // overlapping, by 1 to n-1 bytes
		shift := 1 + rng.IntN(min(n-1, 4096))
		from, to, how = lead, lead+shift, "overlapping, backward"
		if rng.IntN(2) == 0 {
			from, to, how = to, from, "overlapping, forward"
		}
	case rng.IntN(2) == 0:
		from, to, how = lead, lead+n+gap, "apart, to a higher address"
	default:
		from, to, how = lead+n+gap, lead, "apart, to a lower address"
	}
	b := make([]byte, max(from, to)+n+64)
	seed := rng.Uint64()
	fillPattern(b, seed, 0)
	move(b[to:to+n], b[from:from+n])
	want := make([]byte, len(b))
	fillPattern(want, seed, 0)
	fillPattern(want[to:to+n], seed, from)
	var bad []string
	for _, part := range []struct {
		name   string
		lo, hi int
	}{{"in the destination", to, to + n}, {"before it", 0, to}, {"after it", to + n, len(b)}} {
		if diff := chunkDiff(b[part.lo:part.hi], want[part.lo:part.hi]); diff != "" {
			bad = append(bad, part.name+": "+diff)
		}
	}
	if bad != nil {
		s.fail("copy() of %d bytes from +%d to +%d (%s) in a %d-byte buffer at %p: %s", n, from, to, how, len(b), &b[0], strings.Join(bad, "; "))
		return
	}
	s.moves.Add(1)
}

// fillPattern fills b with bytes start on of a pattern of seed, in a byte
// loop (not copy(), which is under test).
func fillPattern(b []byte, seed uint64, start int) {
	var word uint64
	for i := range b {
		at := start + i
		if i == 0 || at%8 == 0 {
			word = mix(seed, uint64(at/8), 17)
		}
		b[i] = byte(word >> (8 * (at % 8)))
	}
}

// goCopy is Go's built-in copy, the runtime's memmove.
func goCopy(dst, src []byte) { copy(dst, src) }

// moveSize picks a copy size for moveCheck: each of memmove's size classes
// as often as the others, the big non-temporal one seldom (it is slow to
// check).
func moveSize(rng *rand.Rand) int {
	switch rng.IntN(16) {
	case 0, 1, 2:
		return 1 + rng.IntN(32)
	case 3, 4, 5:
		return 33 + rng.IntN(256-32)
	case 6, 7, 8:
		return 257 + rng.IntN(1024-256)
	case 9, 10, 11:
		return 1025 + rng.IntN(16<<10-1024)
	case 12, 13, 14:
		return 16<<10 + 1 + rng.IntN(128<<10)
	default:
		return 1<<20 + rng.IntN(64<<10)
	}
}

// sameBytes is bytes.Equal without vector registers.
func sameBytes(a, b []byte) bool {
	for len(a) >= 8 {
		if binary.LittleEndian.Uint64(a) != binary.LittleEndian.Uint64(b) {
			return false
		}
		a, b = a[8:], b[8:]
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Differences are reported diffChunk bytes at a time (an XMM register, or
// half a YMM one), at most diffShown chunks.
const (
	diffChunk = 16
	diffShown = 8
)

// chunkDiff describes where got differs from want (of the same length):
// "" if nowhere, else how many of the 16-byte chunks from their start
// differ and the first of them, each with its offset and the bytes wanted
// and got. It compares 8 bytes at a time in general registers: bytes.Equal
// is vector code too.
func chunkDiff(got, want []byte) string {
	var shown []string
	differ := 0
	for lo := 0; lo < len(want); lo += diffChunk {
		hi := min(lo+diffChunk, len(want))
		if sameBytes(got[lo:hi], want[lo:hi]) {
			continue
		}
		differ++
		if len(shown) < diffShown {
			shown = append(shown, fmt.Sprintf("+%#x want %x got %x", lo, want[lo:hi], got[lo:hi]))
		}
	}
	if differ == 0 {
		return ""
	}
	more := ""
	if differ > len(shown) {
		more = fmt.Sprintf(", and %d more", differ-len(shown))
	}
	return fmt.Sprintf("%d of %d %d-byte chunks differ: %s%s", differ, (len(want)+diffChunk-1)/diffChunk, diffChunk, strings.Join(shown, ", "), more)
}

// zapCheck fills fresh pages, discards them with MADV_DONTNEED (what Go's
// scavenger does to freed heap and stacks) and checks that they read as
// zero afterwards, as fresh anonymous memory must: old data there means
// the kernel's unmapping and TLB flush did not reach this CPU's view of
// the pages. Then it writes and checks a new pattern.
func zapCheck(s *stats, rng *rand.Rand) {
	const page = 4096
	n := page * (1 + rng.IntN(copyPages))
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		s.fail("mmap %d bytes: %v", n, err)
		return
	}
	defer syscall.Munmap(b)
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n/8)
	seed := rng.Uint64() | 1
	for i := range words {
		words[i] = mix(seed, uint64(i), 11)
	}
	if err := syscall.Madvise(b, syscall.MADV_DONTNEED); err != nil {
		s.fail("madvise: %v", err)
		return
	}
	stale := 0
	first := -1
	for i, w := range words {
		if w != 0 {
			if first < 0 {
				first = i
			}
			stale++
		}
	}
	if stale > 0 {
		s.fail("%d of %d words (first at page %d +%#x) still held data after MADV_DONTNEED of %d pages: a stale mapping",
			stale, len(words), first*8/page, first*8%page, n/page)
		return
	}
	for i := range words {
		words[i] = mix(seed, uint64(i), 13)
	}
	for i := range words {
		if words[i] != mix(seed, uint64(i), 13) {
			s.fail("discarded pages: word %d (page %d) reads %#x after writing %#x", i, i*8/page, words[i], mix(seed, uint64(i), 13))
			return
		}
	}
	s.zaps.Add(1)
}
