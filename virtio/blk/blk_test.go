package blk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/virtiotest"
)

const wait = 5 * time.Second

// newImage writes an image of size bytes of pseudo-random content.
func newImage(t testing.TB, size int) (string, []byte) {
	t.Helper()
	content := make([]byte, size)
	r := rand.New(rand.NewPCG(1, uint64(size)))
	for i := range content {
		content[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, content
}

func header(typ uint32, sector uint64) []byte {
	h := make([]byte, headerSize)
	binary.LittleEndian.PutUint32(h[0:], typ)
	binary.LittleEndian.PutUint64(h[8:], sector)
	return h
}

// req is a request as a test built it: its chain, data and status buffer.
type req struct {
	chain  *virtio.Chain
	data   []byte // IN: where the device reads into; OUT: what it writes
	status []byte
}

var head uint16

func newReq(typ uint32, sector uint64, n int) req {
	head++
	r := req{data: make([]byte, n), status: []byte{0xff}}
	c := &virtio.Chain{Head: head, Readable: [][]byte{header(typ, sector)}}
	switch typ {
	case typeOut:
		c.Readable = append(c.Readable, r.data)
	default:
		if n > 0 {
			c.Writable = append(c.Writable, r.data)
		}
	}
	c.Writable = append(c.Writable, r.status)
	r.chain = c
	return r
}

func start(t testing.TB, d *Device, features uint64, n int) ([]*virtiotest.Queue, *virtiotest.Driver) {
	t.Helper()
	qs := make([]*virtiotest.Queue, n)
	for i := range qs {
		qs[i] = virtiotest.NewQueue()
	}
	drv := &virtiotest.Driver{}
	if err := d.Activate(drv.Activation(features, qs...)); err != nil {
		t.Fatal(err)
	}
	return qs, drv
}

func open(t testing.TB, path string, o Options) *Device {
	t.Helper()
	d, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

// do submits reqs on q and waits for all of them.
func do(t testing.TB, q *virtiotest.Queue, reqs ...req) []virtiotest.Used {
	t.Helper()
	before := len(q.Used())
	for _, r := range reqs {
		q.Add(r.chain)
	}
	u := q.WaitUsed(before+len(reqs), wait)
	if len(u) < before+len(reqs) {
		t.Fatalf("%d of %d requests completed", len(u)-before, len(reqs))
	}
	return u[before:]
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", 4096)
	for _, tc := range []struct {
		name string
		path string
		o    Options
	}{
		{"missing", filepath.Join(dir, "nope"), Options{Queues: 1}},
		{"directory", dir, Options{Queues: 1}},
		{"empty", write("empty", 0), Options{Queues: 1}},
		{"not sectors", write("odd", 1000), Options{Queues: 1}},
		{"no queues", good, Options{}},
		{"long serial", good, Options{Queues: 1, Serial: "123456789012345678901"}},
	} {
		d, err := Open(tc.path, tc.o)
		if err == nil {
			d.Close()
			t.Errorf("%s: Open succeeded", tc.name)
			continue
		}
		t.Logf("%s: %v", tc.name, err)
	}
}

func TestConfig(t *testing.T) {
	path, _ := newImage(t, 64*sectorSize)
	d := open(t, path, Options{Queues: 3})
	if d.Type() != virtio.TypeBlock {
		t.Errorf("type %d", d.Type())
	}
	want := uint64(featureSegMax | featureBlkSize | featureFlush | featureMQ)
	if f := d.Features(); f != want {
		t.Errorf("features %#x, want %#x", f, want)
	}
	if s := d.QueueSizes(); len(s) != 3 {
		t.Errorf("queue sizes %v", s)
	}
	cfg := make([]byte, 64)
	d.ReadConfig(0, cfg)
	le := binary.LittleEndian
	if c := le.Uint64(cfg[cfgCapacity:]); c != 64 {
		t.Errorf("capacity %d", c)
	}
	if s := le.Uint32(cfg[cfgSegMax:]); s != segMax {
		t.Errorf("seg_max %d", s)
	}
	if b := le.Uint32(cfg[cfgBlkSize:]); b != sectorSize {
		t.Errorf("blk_size %d", b)
	}
	if n := le.Uint16(cfg[cfgNumQueues:]); n != 3 {
		t.Errorf("num_queues %d", n)
	}
	// A sub-field read, a read straddling the end, a read past it.
	two := make([]byte, 2)
	d.ReadConfig(cfgNumQueues, two)
	if le.Uint16(two) != 3 {
		t.Errorf("num_queues read alone: %v", two)
	}
	tail := []byte{1, 2, 3, 4}
	d.ReadConfig(configSize-2, tail)
	past := []byte{1, 2, 3, 4}
	d.ReadConfig(1000, past)
	if !bytes.Equal(tail, make([]byte, 4)) || !bytes.Equal(past, make([]byte, 4)) {
		t.Errorf("past the end: %v %v", tail, past)
	}
	d.WriteConfig(0, []byte{9, 9, 9, 9})
	d.ReadConfig(0, cfg[:8])
	if le.Uint64(cfg) != 64 {
		t.Error("a config write changed the capacity")
	}
	ro := open(t, path, Options{Queues: 1, ReadOnly: true})
	if ro.Features()&featureRO == 0 {
		t.Error("read-only without VIRTIO_BLK_F_RO")
	}
}

func TestReadWrite(t *testing.T) {
	path, content := newImage(t, 64*sectorSize)
	d := open(t, path, Options{Queues: 1})
	qs, drv := start(t, d, 0, 1)

	w := newReq(typeOut, 3, 8*sectorSize)
	for i := range w.data {
		w.data[i] = byte(i * 7)
	}
	u := do(t, qs[0], w)
	if w.status[0] != statusOK || u[0].Written != 1 {
		t.Fatalf("write: status %d written %d", w.status[0], u[0].Written)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(content[3*sectorSize:], w.data)
	if !bytes.Equal(file, content) {
		t.Fatal("file contents differ after the write")
	}

	r := newReq(typeIn, 2, 10*sectorSize)
	u = do(t, qs[0], r)
	if r.status[0] != statusOK || u[0].Written != uint32(len(r.data)+1) {
		t.Fatalf("read: status %d written %d", r.status[0], u[0].Written)
	}
	if !bytes.Equal(r.data, content[2*sectorSize:12*sectorSize]) {
		t.Fatal("read back differs")
	}

	// The layout Linux never sends but the spec allows: a header split
	// over two buffers, data split unevenly, the status sharing the last
	// data buffer.
	h := header(typeIn, 0)
	buf := make([]byte, 2*sectorSize+1)
	odd := &virtio.Chain{
		Readable: [][]byte{h[:5], h[5:]},
		Writable: [][]byte{buf[:100], buf[100:]},
	}
	u = do(t, qs[0], req{chain: odd})
	if buf[len(buf)-1] != statusOK || u[0].Written != uint32(len(buf)) {
		t.Fatalf("split read: status %d written %d", buf[len(buf)-1], u[0].Written)
	}
	if !bytes.Equal(buf[:2*sectorSize], content[:2*sectorSize]) {
		t.Fatal("split read differs")
	}

	s := d.Stats()[0]
	if s.Reads != 2 || s.Writes != 1 || s.BytesWritten != 8*sectorSize || s.BytesRead != 12*sectorSize || s.Errors != 0 {
		t.Errorf("stats %+v", s)
	}
	if s.DirectIOs+s.BufferedIOs != 3 {
		t.Errorf("%d direct + %d buffered I/Os, want 3", s.DirectIOs, s.BufferedIOs)
	}
	if qs[0].WaitInterrupts(1, wait) == 0 {
		t.Error("no interrupt")
	}
	if e := drv.NeedsReset(); len(e) != 0 {
		t.Errorf("NeedsReset %v", e)
	}
}

func TestFlushAndGetID(t *testing.T) {
	path, _ := newImage(t, 8*sectorSize)
	d := open(t, path, Options{Queues: 1, Serial: "disk-0"})
	qs, _ := start(t, d, 0, 1)

	f := newReq(typeFlush, 0, 0)
	id := newReq(typeGetID, 0, serialLen)
	u := do(t, qs[0], f, id)
	if f.status[0] != statusOK || u[0].Written != 1 {
		t.Errorf("flush: status %d written %d", f.status[0], u[0].Written)
	}
	want := make([]byte, serialLen)
	copy(want, "disk-0")
	if id.status[0] != statusOK || u[1].Written != serialLen+1 || !bytes.Equal(id.data, want) {
		t.Errorf("get id: status %d written %d id %q", id.status[0], u[1].Written, id.data)
	}
	if s := d.Stats()[0]; s.Flushes != 1 || s.GetIDs != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestErrors(t *testing.T) {
	path, content := newImage(t, 16*sectorSize)
	d := open(t, path, Options{Queues: 1})
	qs, drv := start(t, d, 0, 1)

	shortHdr := req{status: []byte{0xff}}
	shortHdr.chain = &virtio.Chain{Readable: [][]byte{make([]byte, 8)}, Writable: [][]byte{shortHdr.status}}
	noHdr := req{status: []byte{0xff}}
	noHdr.chain = &virtio.Chain{Writable: [][]byte{noHdr.status}}

	for _, tc := range []struct {
		name   string
		r      req
		status byte
	}{
		{"read at capacity", newReq(typeIn, 16, sectorSize), statusIOErr},
		{"read across the end", newReq(typeIn, 15, 2*sectorSize), statusIOErr},
		{"write across the end", newReq(typeOut, 15, 2*sectorSize), statusIOErr},
		{"sector overflow", newReq(typeIn, 1<<63, sectorSize), statusIOErr},
		{"last sector", newReq(typeIn, 15, sectorSize), statusOK},
		{"partial sector", newReq(typeIn, 0, 100), statusIOErr},
		{"partial sector write", newReq(typeOut, 0, 600), statusIOErr},
		{"short header", shortHdr, statusIOErr},
		{"no header", noHdr, statusIOErr},
		{"unknown type", newReq(99, 0, 0), statusUnsupp},
		{"discard", newReq(11, 0, 16), statusUnsupp},
	} {
		u := do(t, qs[0], tc.r)
		if tc.r.status[0] != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, tc.r.status[0], tc.status)
		}
		if tc.status != statusOK && u[0].Written != 1 {
			t.Errorf("%s: written %d, want 1", tc.name, u[0].Written)
		}
	}
	file, _ := os.ReadFile(path)
	if !bytes.Equal(file, content) {
		t.Error("a failed request changed the file")
	}
	if s := d.Stats()[0]; s.Errors != 8 || s.Unsupported != 2 {
		t.Errorf("stats %+v", s)
	}
	if e := drv.NeedsReset(); len(e) != 0 {
		t.Errorf("NeedsReset %v", e)
	}
}

func TestReadOnly(t *testing.T) {
	path, content := newImage(t, 16*sectorSize)
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	d := open(t, path, Options{Queues: 1, ReadOnly: true})
	qs, _ := start(t, d, featureRO, 1)
	w := newReq(typeOut, 0, sectorSize)
	r := newReq(typeIn, 0, sectorSize)
	f := newReq(typeFlush, 0, 0)
	do(t, qs[0], w, r, f)
	if w.status[0] != statusIOErr {
		t.Errorf("write: status %d", w.status[0])
	}
	if r.status[0] != statusOK || !bytes.Equal(r.data, content[:sectorSize]) {
		t.Errorf("read: status %d", r.status[0])
	}
	if f.status[0] != statusOK {
		t.Errorf("flush: status %d", f.status[0])
	}
	file, _ := os.ReadFile(path)
	if !bytes.Equal(file, content) {
		t.Error("read-only image changed")
	}
}

func TestNoStatusByte(t *testing.T) {
	path, _ := newImage(t, 16*sectorSize)
	d := open(t, path, Options{Queues: 1})
	qs, drv := start(t, d, 0, 1)
	bad := &virtio.Chain{Head: 7, Readable: [][]byte{header(typeIn, 0)}, Writable: [][]byte{{}}}
	after := newReq(typeIn, 0, sectorSize)
	qs[0].Add(bad, after.chain)
	deadline := time.Now().Add(wait)
	for len(drv.NeedsReset()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e := drv.NeedsReset()
	if len(e) != 1 || !errors.Is(e[0], virtio.ErrBadChain) {
		t.Fatalf("NeedsReset %v", e)
	}
	// The queue stopped: nothing after the bad chain is served, and the
	// bad chain itself is not pushed.
	time.Sleep(10 * time.Millisecond)
	if u := qs[0].Used(); len(u) != 0 {
		t.Errorf("%d chains pushed after the bad one", len(u))
	}
	if qs[0].Pending() != 1 {
		t.Errorf("%d chains pending, want 1", qs[0].Pending())
	}
	d.Reset()
}

func TestBrokenRing(t *testing.T) {
	path, _ := newImage(t, 16*sectorSize)
	d := open(t, path, Options{Queues: 1})
	q := virtiotest.NewQueue()
	q.FailPop(virtio.ErrBadChain)
	drv := &virtiotest.Driver{}
	if err := d.Activate(drv.Activation(0, q)); err != nil {
		t.Fatal(err)
	}
	q.Kick()
	deadline := time.Now().Add(wait)
	for len(drv.NeedsReset()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	d.Reset()
	if e := drv.NeedsReset(); len(e) != 1 || !errors.Is(e[0], virtio.ErrBadChain) {
		t.Errorf("NeedsReset %v", e)
	}
}

// Each queue's goroutine writes then reads its own region, all at once.
func TestMultiQueue(t *testing.T) {
	const nq, perQueue, sectors = 4, 50, 4
	path, _ := newImage(t, nq*perQueue*sectors*sectorSize)
	d := open(t, path, Options{Queues: nq})
	qs, drv := start(t, d, featureMQ, nq)
	var wg sync.WaitGroup
	for qi, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var writes, reads []req
			for i := range perQueue {
				sector := uint64((qi*perQueue + i) * sectors)
				w := newReqAt(typeOut, sector, sectors*sectorSize)
				for j := range w.data {
					w.data[j] = byte(qi*31 + i + j)
				}
				writes = append(writes, w)
				reads = append(reads, newReqAt(typeIn, sector, sectors*sectorSize))
			}
			for _, w := range writes {
				q.Add(w.chain)
			}
			if u := q.WaitUsed(perQueue, wait); len(u) != perQueue {
				t.Errorf("queue %d: %d writes done", qi, len(u))
				return
			}
			for _, r := range reads {
				q.Add(r.chain)
			}
			if u := q.WaitUsed(2*perQueue, wait); len(u) != 2*perQueue {
				t.Errorf("queue %d: %d reads done", qi, len(u)-perQueue)
				return
			}
			for i := range reads {
				if writes[i].status[0] != statusOK || reads[i].status[0] != statusOK || !bytes.Equal(reads[i].data, writes[i].data) {
					t.Errorf("queue %d request %d: read back differs", qi, i)
				}
			}
		}()
	}
	wg.Wait()
	for i, s := range d.Stats() {
		if s.Reads != perQueue || s.Writes != perQueue {
			t.Errorf("queue %d stats %+v", i, s)
		}
	}
	if e := drv.NeedsReset(); len(e) != 0 {
		t.Errorf("NeedsReset %v", e)
	}
}

// newReqAt is newReq safe to call from several goroutines (no shared head).
func newReqAt(typ uint32, sector uint64, n int) req {
	r := req{data: make([]byte, n), status: []byte{0xff}}
	c := &virtio.Chain{Readable: [][]byte{header(typ, sector)}}
	if typ == typeOut {
		c.Readable = append(c.Readable, r.data)
	} else {
		c.Writable = append(c.Writable, r.data)
	}
	c.Writable = append(c.Writable, r.status)
	r.chain = c
	return r
}

// Reset in the middle of a stream of requests: every chain popped was
// pushed, complete, none after Reset returned; a new activation serves
// the rest.
func TestResetMidTraffic(t *testing.T) {
	const n = 400
	path, _ := newImage(t, 64*sectorSize)
	d := open(t, path, Options{Queues: 2})
	qs, _ := start(t, d, featureMQ, 2)
	var reqs [2][]req
	for qi, q := range qs {
		for i := range n {
			typ := uint32(typeIn)
			if i%2 == 1 {
				typ = typeOut
			}
			r := newReqAt(typ, uint64(i%64), sectorSize)
			reqs[qi] = append(reqs[qi], r)
			q.Add(r.chain)
		}
	}
	qs[0].WaitUsed(10, wait)
	d.Reset()
	for qi, q := range qs {
		used := q.Used()
		if len(used)+q.Pending() != n {
			t.Errorf("queue %d: %d used + %d pending != %d: a chain was popped and dropped", qi, len(used), q.Pending(), n)
		}
		for i, u := range used {
			if s := reqs[qi][i].status[0]; s != statusOK {
				t.Errorf("queue %d request %d: status %d", qi, i, s)
			}
			_ = u
		}
		q.Close()
	}
	t.Logf("at reset: %d and %d of %d done", len(qs[0].Used()), len(qs[1].Used()), n)
	time.Sleep(5 * time.Millisecond)
	for qi, q := range qs {
		if len(q.Used())+q.Pending() != n {
			t.Errorf("queue %d served after Reset", qi)
		}
	}

	// The driver re-initializes: new queues holding what was left.
	fresh := make([]*virtiotest.Queue, 2)
	for qi, q := range qs {
		fresh[qi] = virtiotest.NewQueue()
		done := len(q.Used())
		for _, r := range reqs[qi][done:] {
			fresh[qi].AddQuiet(r.chain)
		}
	}
	drv := &virtiotest.Driver{}
	if err := d.Activate(drv.Activation(featureMQ, fresh...)); err != nil {
		t.Fatal(err)
	}
	for qi, q := range fresh {
		want := n - len(qs[qi].Used())
		if u := q.WaitUsed(want, wait); len(u) != want {
			t.Errorf("queue %d after re-activation: %d of %d served", qi, len(u), want)
		}
	}
	for qi := range reqs {
		for i, r := range reqs[qi] {
			if r.status[0] != statusOK {
				t.Errorf("queue %d request %d: status %d", qi, i, r.status[0])
				break
			}
		}
	}
}

// alignedBuf is n bytes of page-aligned memory, as guest RAM is.
func alignedBuf(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func TestDirect(t *testing.T) {
	path, content := newImage(t, 64*directAlign)
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_DIRECT, 0)
	canDirect := err == nil
	if canDirect {
		f.Close()
	}
	d := open(t, path, Options{Queues: 1})
	if d.Direct() != canDirect {
		t.Fatalf("Direct() = %v, but O_DIRECT open on %s: %v", d.Direct(), filepath.Dir(path), err)
	}
	t.Logf("O_DIRECT: %v", canDirect)
	qs, _ := start(t, d, 0, 1)

	mem := alignedBuf(t, 4*directAlign)
	st := make([]byte, 1)
	mk := func(typ uint32, sector uint64, data []byte) req {
		c := &virtio.Chain{Readable: [][]byte{header(typ, sector)}}
		if typ == typeOut {
			c.Readable = append(c.Readable, data)
		} else {
			c.Writable = append(c.Writable, data)
		}
		c.Writable = append(c.Writable, st)
		return req{chain: c, status: st}
	}
	check := func(name string, r req, direct bool, want []byte, buf []byte) {
		t.Helper()
		before := d.Stats()[0]
		st[0] = 0xff
		do(t, qs[0], r)
		after := d.Stats()[0]
		if st[0] != statusOK {
			t.Errorf("%s: status %d", name, st[0])
		}
		if want != nil && !bytes.Equal(buf, want) {
			t.Errorf("%s: data differs", name)
		}
		gotDirect := after.DirectIOs > before.DirectIOs
		if gotDirect != (direct && canDirect) {
			t.Errorf("%s: direct %v, want %v", name, gotDirect, direct && canDirect)
		}
	}
	const sectorsPerPage = directAlign / sectorSize
	check("aligned read", mk(typeIn, 2*sectorsPerPage, mem[:2*directAlign]), true,
		content[2*directAlign:4*directAlign], mem[:2*directAlign])
	check("misaligned offset", mk(typeIn, 1, mem[:directAlign]), false,
		content[sectorSize:sectorSize+directAlign], mem[:directAlign])
	check("misaligned buffer", mk(typeIn, 0, mem[sectorSize:sectorSize+directAlign]), false,
		content[:directAlign], mem[sectorSize:sectorSize+directAlign])
	check("short buffer", mk(typeIn, 0, mem[:sectorSize]), false, content[:sectorSize], mem[:sectorSize])

	for i := range mem[:directAlign] {
		mem[i] = byte(i + 3)
	}
	check("aligned write", mk(typeOut, sectorsPerPage, mem[:directAlign]), true, nil, nil)
	// A buffered read of what a direct write wrote: the two descriptors
	// see one file.
	got := make([]byte, directAlign+1)[1:] // misaligned, whatever the allocator does
	check("buffered read after direct write", mk(typeIn, sectorsPerPage, got), false, mem[:directAlign], got)
}
