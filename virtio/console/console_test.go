package console

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/govmm/govmm/virtio"
	"github.com/govmm/govmm/virtio/virtiotest"
)

const wait = 5 * time.Second

// syncBuffer is an io.Writer the test can read while the device writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func start(t *testing.T, d *Device, features uint64) (rx, tx *virtiotest.Queue, drv *virtiotest.Driver) {
	t.Helper()
	rx, tx = virtiotest.NewQueue(), virtiotest.NewQueue()
	drv = &virtiotest.Driver{}
	if err := d.Activate(drv.Activation(features, rx, tx)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Reset)
	return rx, tx, drv
}

func rxChain(sizes ...int) *virtio.Chain {
	c := &virtio.Chain{}
	for _, n := range sizes {
		c.Writable = append(c.Writable, make([]byte, n))
	}
	return c
}

// received concatenates what the device wrote into used receive chains.
func received(used []virtiotest.Used) string {
	var s []byte
	for _, u := range used {
		left := int(u.Written)
		for _, b := range u.Chain.Writable {
			k := min(left, len(b))
			s = append(s, b[:k]...)
			left -= k
		}
	}
	return string(s)
}

func TestOutputOrder(t *testing.T) {
	out := &syncBuffer{}
	d := New(out)
	_, tx, _ := start(t, d, 0)
	var want string
	for i := range 100 {
		a, b := []byte{'a' + byte(i%26)}, []byte{'0' + byte(i%10), '\n'}
		want += string(a) + string(b)
		tx.Add(&virtio.Chain{Head: uint16(i), Readable: [][]byte{a, {}, b}})
	}
	u := tx.WaitUsed(100, wait)
	if len(u) != 100 {
		t.Fatalf("%d of 100 chains", len(u))
	}
	for i, x := range u {
		if x.Written != 0 || x.Chain.Head != uint16(i) {
			t.Fatalf("used %d: head %d written %d", i, x.Chain.Head, x.Written)
		}
	}
	if got := out.String(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if s := d.Stats(); s.BytesOut != uint64(len(want)) || s.Chains != 100 {
		t.Errorf("stats %+v", s)
	}
	if tx.WaitInterrupts(1, wait) == 0 {
		t.Error("no interrupt")
	}
}

// writeLog records each Write separately.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) get() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// A chain is one Write, however many buffers it has: nothing else written
// to out can land inside it.
func TestOutputOneWritePerChain(t *testing.T) {
	out := &writeLog{}
	d := New(out)
	_, tx, _ := start(t, d, 0)
	tx.Add(
		&virtio.Chain{Readable: [][]byte{[]byte("ab"), {}, []byte("cd"), []byte("e\n")}},
		&virtio.Chain{Readable: [][]byte{{}, []byte("single\n")}},
		&virtio.Chain{Readable: [][]byte{{}}},
		&virtio.Chain{Readable: [][]byte{[]byte("x"), []byte("y")}},
	)
	tx.WaitUsed(4, wait)
	want := []string{"abcde\n", "single\n", "xy"}
	if got := out.get(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("writes %q, want %q", got, want)
	}
	if s := d.Stats(); s.Chains != 4 || s.BytesOut != 15 {
		t.Errorf("stats %+v", s)
	}
}

func TestInputBeforeBuffers(t *testing.T) {
	d := New(&syncBuffer{})
	d.Input([]byte("hello, "))
	d.Input([]byte("world"))
	rx, _, _ := start(t, d, 0)
	time.Sleep(5 * time.Millisecond) // nothing to fill yet: input must wait
	rx.Add(rxChain(64))
	u := rx.WaitUsed(1, wait)
	if got := received(u); got != "hello, world" {
		t.Errorf("received %q", got)
	}
	if rx.WaitInterrupts(1, wait) == 0 {
		t.Error("no interrupt")
	}
}

func TestInputAfterBuffers(t *testing.T) {
	d := New(&syncBuffer{})
	rx, _, _ := start(t, d, 0)
	rx.Add(rxChain(64), rxChain(64))
	time.Sleep(5 * time.Millisecond)
	if n := len(rx.Used()); n != 0 {
		t.Fatalf("%d empty chains pushed", n)
	}
	d.Input([]byte("abc"))
	u := rx.WaitUsed(1, wait)
	if got := received(u); got != "abc" {
		t.Errorf("received %q", got)
	}
	d.Input([]byte("def"))
	u = rx.WaitUsed(2, wait)
	if got := received(u); got != "abcdef" {
		t.Errorf("received %q", got)
	}
}

// Input larger than the buffers posted: split across them, the rest kept
// until more are posted, order kept throughout.
func TestInputSplit(t *testing.T) {
	d := New(&syncBuffer{})
	rx, _, _ := start(t, d, 0)
	var want []byte
	for i := range 1000 {
		want = append(want, byte('A'+i%50))
	}
	d.Input(want[:600])
	rx.Add(rxChain(3, 4), rxChain(1), rxChain(8))
	rx.WaitUsed(3, wait)
	d.Input(want[600:])
	for len(received(rx.Used())) < len(want) {
		before := len(rx.Used())
		rx.Add(rxChain(7, 1, 13))
		if len(rx.WaitUsed(before+1, wait)) == before {
			t.Fatal("chain not filled")
		}
	}
	u := rx.Used()
	if got := received(u); got != string(want) {
		t.Errorf("received %q\nwant %q", got, want)
	}
	for i, x := range u[:3] {
		if int(x.Written) != x.Chain.WritableLen() {
			t.Errorf("chain %d: %d of %d bytes filled while input waited", i, x.Written, x.Chain.WritableLen())
		}
	}
	if s := d.Stats(); s.BytesIn != uint64(len(want)) {
		t.Errorf("stats %+v", s)
	}
	if errs := rx.PushErrors(); len(errs) != 0 {
		t.Error(errs)
	}
}

// Input from many goroutines at once: every byte arrives once, and each
// goroutine's bytes in its order.
func TestInputConcurrent(t *testing.T) {
	d := New(&syncBuffer{})
	rx, _, _ := start(t, d, 0)
	const writers, each = 4, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				d.Input([]byte{byte(w), byte(i)})
			}
		}()
	}
	stopPosting := make(chan struct{})
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		for {
			select {
			case <-stopPosting:
				return
			default:
			}
			if rx.Pending() < 4 {
				rx.Add(rxChain(16))
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	wg.Wait()
	deadline := time.Now().Add(wait)
	for len(received(rx.Used())) < 2*writers*each && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(stopPosting)
	<-posted
	got := received(rx.Used())
	if len(got) != 2*writers*each {
		t.Fatalf("received %d bytes, want %d", len(got), 2*writers*each)
	}
	next := make([]int, writers)
	for i := 0; i < len(got); i += 2 {
		w, n := int(got[i]), int(got[i+1])
		if n != next[w]%256 {
			t.Fatalf("writer %d: byte %d arrived at position %d", w, n, next[w])
		}
		next[w]++
	}
}

// Reset stops serving; input the guest was not given waits for the next
// activation.
func TestReset(t *testing.T) {
	out := &syncBuffer{}
	d := New(out)
	rx, tx, _ := start(t, d, 0)
	rx.Add(rxChain(4))
	d.Input([]byte("0123456789"))
	rx.WaitUsed(1, wait)
	tx.Add(&virtio.Chain{Readable: [][]byte{[]byte("out1")}})
	tx.WaitUsed(1, wait)
	d.Reset()
	rx.Close()
	tx.Close()
	d.Input([]byte("ab"))
	tx.Add(&virtio.Chain{Readable: [][]byte{[]byte("lost")}})
	time.Sleep(5 * time.Millisecond)
	if len(tx.Used()) != 1 || out.String() != "out1" {
		t.Fatalf("served after reset: output %q", out.String())
	}

	rx2, tx2, _ := start(t, d, 0)
	rx2.Add(rxChain(100))
	if got := received(rx2.WaitUsed(1, wait)); got != "456789ab" {
		t.Errorf("after reset received %q, want %q", got, "456789ab")
	}
	tx2.Add(&virtio.Chain{Readable: [][]byte{[]byte("out2")}})
	tx2.WaitUsed(1, wait)
	if out.String() != "out1out2" {
		t.Errorf("output %q", out.String())
	}
}

// Reset while input streams in: nothing Input gave is lost or repeated.
func TestResetMidInput(t *testing.T) {
	d := New(&syncBuffer{})
	var all []byte
	for i := range 5000 {
		all = append(all, byte(i))
	}
	var got []byte
	pos := 0
	for round := 0; pos < len(all) || len(got) < len(all); round++ {
		if round > 1000 {
			t.Fatal("no progress")
		}
		rx, _, _ := start(t, d, 0)
		if pos < len(all) {
			n := min(700, len(all)-pos)
			d.Input(all[pos : pos+n])
			pos += n
		}
		for range 5 {
			rx.Add(rxChain(37))
		}
		time.Sleep(time.Duration(round%3) * time.Millisecond)
		d.Reset()
		rx.Close()
		got = append(got, received(rx.Used())...)
	}
	if !bytes.Equal(got, all) {
		t.Errorf("received %d bytes, differing from the %d given", len(got), len(all))
	}
}

func TestSize(t *testing.T) {
	d := New(&syncBuffer{})
	if d.Features()&featureSize == 0 || d.Type() != virtio.TypeConsole || len(d.QueueSizes()) != 2 {
		t.Fatal("device description")
	}
	d.SetSize(80, 25) // before activation: no notification to send
	_, _, drv := start(t, d, featureSize)
	cfg := make([]byte, 16)
	d.ReadConfig(0, cfg)
	if binary.LittleEndian.Uint16(cfg[0:]) != 80 || binary.LittleEndian.Uint16(cfg[2:]) != 25 || !bytes.Equal(cfg[4:], make([]byte, 12)) {
		t.Errorf("config %v", cfg)
	}
	d.SetSize(132, 43)
	if drv.ConfigChanges() != 1 {
		t.Errorf("%d config changes", drv.ConfigChanges())
	}
	rows := make([]byte, 2)
	d.ReadConfig(cfgRows, rows)
	if binary.LittleEndian.Uint16(rows) != 43 {
		t.Errorf("rows %v", rows)
	}
	d.Reset()
	_, _, drv2 := start(t, d, 0) // F_SIZE not negotiated: no notification
	d.SetSize(1, 1)
	if drv2.ConfigChanges() != 0 || drv.ConfigChanges() != 1 {
		t.Error("config change sent without F_SIZE")
	}
}

func TestBadReceiveChain(t *testing.T) {
	d := New(&syncBuffer{})
	rx, _, drv := start(t, d, 0)
	d.Input([]byte("x"))
	rx.Add(&virtio.Chain{Readable: [][]byte{make([]byte, 8)}})
	deadline := time.Now().Add(wait)
	for len(drv.NeedsReset()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if e := drv.NeedsReset(); len(e) != 1 || !errors.Is(e[0], virtio.ErrBadChain) {
		t.Errorf("NeedsReset %v", e)
	}
}
