package virtio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeMem is guest RAM at GPA 0 for tests.
type fakeMem []byte

func (m fakeMem) Slice(gpa, n uint64) ([]byte, error) {
	if gpa > uint64(len(m)) || n > uint64(len(m))-gpa {
		return nil, fmt.Errorf("[%#x, +%#x) is not RAM", gpa, n)
	}
	return m[gpa : gpa+n], nil
}

// mappedRAM is n bytes of fakeMem mapped as govmm maps guest RAM
// (package memory: anonymous, private, outside the Go heap), unmapped
// when the test ends, unless it failed: a test that gave up on a
// deadlock may leave goroutines that still read it.
func mappedRAM(t testing.TB, n int) fakeMem {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatalf("mapping %d bytes of guest RAM: %v", n, err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			unix.Munmap(b)
		}
	})
	return fakeMem(b)
}

// testDriver is the driver side of one split queue in a fakeMem.
type testDriver struct {
	mem               fakeMem
	size              uint16
	desc, avail, used uint64
	availIdx          uint16
}

func newTestDriver(mem fakeMem, size uint16, base uint64) *testDriver {
	d := &testDriver{mem: mem, size: size, desc: base}
	d.avail = base + 16*uint64(size)
	d.used = (d.avail + 6 + 2*uint64(size) + 4095) &^ 4095
	return d
}

func (d *testDriver) config(eventIdx, indirect bool) QueueConfig {
	return QueueConfig{Size: d.size, Desc: d.desc, Driver: d.avail, Device: d.used, EventIdx: eventIdx, Indirect: indirect}
}

func (d *testDriver) setDesc(table uint64, i int, addr uint64, length uint32, flags, next uint16) {
	b := d.mem[table+16*uint64(i):]
	binary.LittleEndian.PutUint64(b[0:], addr)
	binary.LittleEndian.PutUint32(b[8:], length)
	binary.LittleEndian.PutUint16(b[12:], flags)
	binary.LittleEndian.PutUint16(b[14:], next)
}

// add puts head on the avail ring and publishes avail idx (atomically,
// like a driver's store-release).
func (d *testDriver) add(head uint16) {
	binary.LittleEndian.PutUint16(d.mem[d.avail+4+2*uint64(d.availIdx%d.size):], head)
	d.availIdx++
	store16(d.mem, int(d.avail+2), d.availIdx)
}

func (d *testDriver) setAvailFlags(f uint16) { store16(d.mem, int(d.avail), f) }
func (d *testDriver) setUsedEvent(v uint16) {
	store16(d.mem, int(d.avail+4+2*uint64(d.size)), v)
}
func (d *testDriver) usedIdx() uint16    { return load16(d.mem, int(d.used+2)) }
func (d *testDriver) usedFlags() uint16  { return load16(d.mem, int(d.used)) }
func (d *testDriver) availEvent() uint16 { return load16(d.mem, int(d.used+4+8*uint64(d.size))) }
func (d *testDriver) usedElem(i uint16) (id, length uint32) {
	b := d.mem[d.used+4+8*uint64(i%d.size):]
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
}

func newTestQueue(t testing.TB, d *testDriver, eventIdx, indirect bool, irq func()) *Queue {
	t.Helper()
	q, err := NewQueue(d.config(eventIdx, indirect), d.mem, irq, make(chan struct{}, 1))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestQueuePopPush(t *testing.T) {
	mem := make(fakeMem, 1<<16)
	d := newTestDriver(mem, 8, 0)
	q := newTestQueue(t, d, false, false, nil)
	if c, err := q.Pop(); c != nil || err != nil {
		t.Fatalf("empty ring: Pop = %v, %v", c, err)
	}
	d.setDesc(d.desc, 3, 0x8000, 16, descFNext, 5)
	d.setDesc(d.desc, 5, 0x9000, 100, descFNext|descFWrite, 1)
	d.setDesc(d.desc, 1, 0x9100, 28, descFWrite, 0)
	copy(mem[0x8000:], "request header!!")
	d.add(3)
	c, err := q.Pop()
	if err != nil || c == nil {
		t.Fatalf("Pop = %v, %v", c, err)
	}
	if c.Head != 3 || len(c.Readable) != 1 || len(c.Writable) != 2 || c.ReadableLen() != 16 || c.WritableLen() != 128 {
		t.Fatalf("chain %+v", c)
	}
	if string(c.Readable[0]) != "request header!!" {
		t.Fatalf("readable %q", c.Readable[0])
	}
	c.Writable[0][0] = 0xAB
	if mem[0x9000] != 0xAB {
		t.Fatal("writable buffer does not alias guest memory")
	}
	if err := q.Push(c, 1000); err != nil { // clamped to 128
		t.Fatal(err)
	}
	if d.usedIdx() != 1 {
		t.Fatalf("used idx %d", d.usedIdx())
	}
	if id, n := d.usedElem(0); id != 3 || n != 128 {
		t.Fatalf("used elem %d, %d", id, n)
	}
	if err := q.Push(c, 0); err == nil {
		t.Fatal("Push with nothing outstanding succeeded")
	}
}

// TestQueueWrap runs the indices through several 16-bit wraps.
func TestQueueWrap(t *testing.T) {
	mem := make(fakeMem, 1<<16)
	d := newTestDriver(mem, 4, 0)
	q := newTestQueue(t, d, true, false, nil)
	for i := 0; i < 200000; i++ {
		h := uint16(i % 4)
		d.setDesc(d.desc, int(h), 0x8000, 4, descFWrite, 0)
		d.add(h)
		c, err := q.Pop()
		if err != nil || c == nil || c.Head != h {
			t.Fatalf("op %d: Pop = %+v, %v", i, c, err)
		}
		if err := q.Push(c, 4); err != nil {
			t.Fatal(err)
		}
		q.Interrupt()
		if d.usedIdx() != uint16(i+1) {
			t.Fatalf("op %d: used idx %d", i, d.usedIdx())
		}
	}
}

func TestQueueIndirect(t *testing.T) {
	mem := make(fakeMem, 1<<16)
	d := newTestDriver(mem, 8, 0)
	q := newTestQueue(t, d, false, true, nil)
	const table = 0x6000
	d.setDesc(table, 0, 0x8000, 8, descFNext, 2)
	d.setDesc(table, 2, 0x8100, 8, descFNext|descFWrite, 1)
	d.setDesc(table, 1, 0x8200, 1, descFWrite, 0)
	d.setDesc(d.desc, 0, table, 3*16, descFIndirect, 0)
	d.add(0)
	c, err := q.Pop()
	if err != nil || c == nil || len(c.Readable) != 1 || len(c.Writable) != 2 || c.WritableLen() != 9 {
		t.Fatalf("Pop = %+v, %v", c, err)
	}
}

func TestQueueBadChains(t *testing.T) {
	type setup func(d *testDriver)
	cases := []struct {
		name     string
		indirect bool
		set      setup
	}{
		{"loop", false, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x8000, 1, descFNext, 1)
			d.setDesc(d.desc, 1, 0x8000, 1, descFNext, 0)
			d.add(0)
		}},
		{"head out of range", false, func(d *testDriver) { d.add(8) }},
		{"next out of range", false, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x8000, 1, descFNext, 9)
			d.add(0)
		}},
		{"readable after writable", false, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x8000, 1, descFNext|descFWrite, 1)
			d.setDesc(d.desc, 1, 0x8000, 1, 0, 0)
			d.add(0)
		}},
		{"outside RAM", false, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0xFFF0, 0x20, 0, 0)
			d.add(0)
		}},
		{"indirect not negotiated", false, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x6000, 16, descFIndirect, 0)
			d.add(0)
		}},
		{"indirect with next", true, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x6000, 16, descFIndirect|descFNext, 1)
			d.add(0)
		}},
		{"indirect length", true, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x6000, 24, descFIndirect, 0)
			d.add(0)
		}},
		{"indirect empty", true, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0x6000, 0, descFIndirect, 0)
			d.add(0)
		}},
		{"indirect too long", true, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0, 16*(maxIndirect+1), descFIndirect, 0)
			d.add(0)
		}},
		{"nested indirect", true, func(d *testDriver) {
			d.setDesc(0x6000, 0, 0x6100, 16, descFIndirect, 0)
			d.setDesc(d.desc, 0, 0x6000, 16, descFIndirect, 0)
			d.add(0)
		}},
		{"indirect loop", true, func(d *testDriver) {
			d.setDesc(0x6000, 0, 0x8000, 1, descFNext, 1)
			d.setDesc(0x6000, 1, 0x8000, 1, descFNext, 0)
			d.setDesc(d.desc, 0, 0x6000, 32, descFIndirect, 0)
			d.add(0)
		}},
		{"indirect table outside RAM", true, func(d *testDriver) {
			d.setDesc(d.desc, 0, 0xFFF0, 32, descFIndirect, 0)
			d.add(0)
		}},
		{"avail idx jump", false, func(d *testDriver) {
			d.availIdx = 8
			d.add(0) // idx 9 > size 8 ahead of 0
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := make(fakeMem, 1<<16)
			d := newTestDriver(mem, 8, 0)
			q := newTestQueue(t, d, false, tc.indirect, nil)
			tc.set(d)
			c, err := q.Pop()
			if c != nil || !errors.Is(err, ErrBadChain) {
				t.Fatalf("Pop = %v, %v; want ErrBadChain", c, err)
			}
			t.Log(err)
			if _, err2 := q.Pop(); err2 != err {
				t.Fatalf("second Pop = %v, want the same error", err2)
			}
		})
	}
}

func TestQueueSizeRefused(t *testing.T) {
	mem := make(fakeMem, 1<<20)
	for _, n := range []uint16{0, 3, 100, 32769, 65535} {
		d := newTestDriver(mem, 8, 0)
		cfg := d.config(false, false)
		cfg.Size = n
		if _, err := NewQueue(cfg, mem, nil, nil); err == nil {
			t.Errorf("size %d accepted", n)
		}
	}
	d := newTestDriver(mem, 8, 0)
	cfg := d.config(false, false)
	cfg.Device += 2
	if _, err := NewQueue(cfg, mem, nil, nil); err == nil {
		t.Error("misaligned used ring accepted")
	}
	cfg = d.config(false, false)
	cfg.Desc = 1 << 20
	if _, err := NewQueue(cfg, mem, nil, nil); err == nil {
		t.Error("descriptor table outside RAM accepted")
	}
}

// pushOne makes the driver offer a one-buffer chain and the device take
// and return it.
func pushOne(t *testing.T, d *testDriver, q *Queue) {
	t.Helper()
	h := d.availIdx % d.size
	d.setDesc(d.desc, int(h), 0x8000, 4, descFWrite, 0)
	d.add(h)
	c, err := q.Pop()
	if err != nil || c == nil {
		t.Fatalf("Pop = %v, %v", c, err)
	}
	if err := q.Push(c, 1); err != nil {
		t.Fatal(err)
	}
}

func TestQueueEventIdxInterrupts(t *testing.T) {
	mem := make(fakeMem, 1<<16)
	d := newTestDriver(mem, 16, 0)
	irqs := 0
	q := newTestQueue(t, d, true, false, func() { irqs++ })
	q.Interrupt() // nothing pushed: nothing sent, nothing counted
	if irqs != 0 || q.Stats().Suppressed.Load() != 0 {
		t.Fatal("interrupt with nothing pushed")
	}
	pushOne(t, d, q)
	q.Interrupt() // first: always sent
	if irqs != 1 {
		t.Fatalf("irqs %d", irqs)
	}
	// The driver wants an interrupt only once used idx passes 3.
	d.setUsedEvent(3)
	pushOne(t, d, q) // used idx 2
	q.Interrupt()
	if irqs != 1 || q.Stats().Suppressed.Load() != 1 {
		t.Fatalf("irqs %d suppressed %d, want 1, 1", irqs, q.Stats().Suppressed.Load())
	}
	pushOne(t, d, q) // 3
	pushOne(t, d, q) // 4: passes 3
	q.Interrupt()
	if irqs != 2 {
		t.Fatalf("irqs %d, want 2", irqs)
	}
	// avail_event follows what the device has taken.
	if d.availEvent() != 4 {
		t.Fatalf("avail_event %d, want 4", d.availEvent())
	}
	q.DisableKicks()
	if d.availEvent() != 3 {
		t.Fatalf("disabled: avail_event %d, want 3", d.availEvent())
	}
	d.setDesc(d.desc, 4, 0x8000, 4, 0, 0)
	d.add(4)
	if !q.EnableKicks() {
		t.Fatal("EnableKicks missed a buffer added while disabled")
	}
	if d.availEvent() != 4 {
		t.Fatalf("enabled: avail_event %d", d.availEvent())
	}
	if q.Stats().Interrupts.Load() != 2 {
		t.Fatal("interrupt count")
	}
}

func TestQueueNoInterruptFlag(t *testing.T) {
	mem := make(fakeMem, 1<<16)
	d := newTestDriver(mem, 16, 0)
	irqs := 0
	q := newTestQueue(t, d, false, false, func() { irqs++ })
	pushOne(t, d, q)
	d.setAvailFlags(availFNoInterrupt)
	q.Interrupt()
	if irqs != 0 || q.Stats().Suppressed.Load() != 1 {
		t.Fatal("NO_INTERRUPT not honoured")
	}
	d.setAvailFlags(0)
	pushOne(t, d, q)
	q.Interrupt()
	if irqs != 1 {
		t.Fatal("interrupt not sent")
	}
	q.DisableKicks()
	if d.usedFlags() != usedFNoNotify || d.usedIdx() != 2 {
		t.Fatalf("used flags %#x idx %d", d.usedFlags(), d.usedIdx())
	}
	if q.EnableKicks() {
		t.Fatal("EnableKicks reported more on an empty ring")
	}
	if d.usedFlags() != 0 {
		t.Fatal("NO_NOTIFY left set")
	}
}

// FuzzVirtqueue: whatever the driver puts in the rings, Pop returns in
// bounded time, its buffers lie in guest memory, its errors wrap
// ErrBadChain, and used idx counts exactly the Pushes.
func FuzzVirtqueue(f *testing.F) {
	f.Add([]byte{3, 3}, []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0}, []byte{0, 0, 0, 1, 3, 4, 2})
	// An indirect head pointing at a small table in the fuzzed area.
	seed := make([]byte, 64)
	binary.LittleEndian.PutUint64(seed[2:], 0x20)
	binary.LittleEndian.PutUint32(seed[10:], 32)
	binary.LittleEndian.PutUint16(seed[14:], descFIndirect)
	f.Add(seed, []byte{0, 1, 2, 3})
	f.Add([]byte{0xFF, 0xFF, 0xFF}, []byte{0xFF, 0, 0xFE, 1})
	f.Fuzz(func(t *testing.T, ring, ops []byte) {
		if len(ring) < 2 || len(ops) > 512 {
			return
		}
		// ring[0]: log2 size (0..5) and features; ring[1]: avail idx
		// advance; ring[2:]: the descriptor table and beyond (from GPA 0).
		size := uint16(1) << (ring[0] & 7 % 6)
		eventIdx, indirect := ring[0]&0x40 != 0, ring[0]&0x80 != 0
		mem := make(fakeMem, 1<<14)
		copy(mem, ring[2:])
		d := newTestDriver(mem, size, 0)
		// The avail ring entries: from the fuzzed bytes, after the table.
		q, err := NewQueue(d.config(eventIdx, indirect), mem, func() {}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var popped []*Chain
		pushes := uint16(0)
		for _, op := range ops {
			switch op % 6 {
			case 0, 1:
				c, err := q.Pop()
				if err != nil {
					if !errors.Is(err, ErrBadChain) {
						t.Fatalf("error not wrapping ErrBadChain: %v", err)
					}
					continue
				}
				if c == nil {
					continue
				}
				for _, b := range append(append([][]byte{}, c.Readable...), c.Writable...) {
					if !within(mem, b) {
						t.Fatal("buffer outside guest memory")
					}
				}
				popped = append(popped, c)
			case 2:
				if len(popped) > 0 {
					c := popped[0]
					popped = popped[1:]
					if err := q.Push(c, uint32(op)); err != nil {
						t.Fatal(err)
					}
					pushes++
				}
			case 3:
				q.Interrupt()
			case 4:
				q.DisableKicks()
			case 5:
				// The driver adds a head (any value) and may jump idx.
				d.availIdx += uint16(ring[1]&3) * uint16(op>>6)
				d.add(uint16(op >> 3))
				q.EnableKicks()
			}
			if d.usedIdx() != pushes {
				t.Fatalf("used idx %d after %d pushes", d.usedIdx(), pushes)
			}
		}
	})
}

// TestQueueNoLostKick runs a driver goroutine that kicks only when the
// device's suppression (NO_NOTIFY, or avail_event with EVENT_IDX) says
// to, as Linux's virtqueue_kick_prepare does, against a device that
// brackets its batches with DisableKicks/EnableKicks. A lost wakeup (the
// driver skipped a kick the device needed) hangs the device and fails.
// The same for interrupts: the driver waits for its completions only on
// interrupts it was sent, having published used_event / cleared
// NO_INTERRUPT first.
func TestQueueNoLostKick(t *testing.T) {
	for _, eventIdx := range []bool{false, true} {
		t.Run(fmt.Sprintf("eventIdx=%v", eventIdx), func(t *testing.T) {
			const total = 20000
			mem := make(fakeMem, 1<<16)
			d := newTestDriver(mem, 16, 0)
			kicks := make(chan struct{}, 1)
			irqs := make(chan struct{}, 1)
			q, err := NewQueue(d.config(eventIdx, false), mem, func() {
				select {
				case irqs <- struct{}{}:
				default:
				}
			}, kicks)
			if err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			devDone := make(chan struct{})
			go func() { // the device, batches bracketed as Serve brackets them
				defer close(devDone)
				if err := Serve(q, stop, func(*Chain) (uint32, error) { return 1, nil }); err != nil {
					t.Error(err)
				}
			}()
			deadline := time.After(20 * time.Second)
			for n := 0; n < total; {
				// Ask for an interrupt at the next completion, then
				// re-check (the device may have pushed meanwhile).
				if eventIdx {
					d.setUsedEvent(d.usedIdx())
				}
				for d.availIdx-d.usedIdx() == d.size {
					select {
					case <-irqs:
					case <-deadline:
						t.Fatalf("no interrupt: %d of %d, used idx %d", n, total, d.usedIdx())
					}
				}
				old := d.availIdx
				for i := 0; i < 3 && d.availIdx-d.usedIdx() < d.size && n < total; i++ {
					h := d.availIdx % d.size
					d.setDesc(d.desc, int(h), 0x8000, 4, descFWrite, 0)
					d.add(h)
					n++
				}
				var kick bool
				if eventIdx {
					kick = vringNeedEvent(d.availEvent(), d.availIdx, old)
				} else {
					kick = d.usedFlags()&usedFNoNotify == 0
				}
				if kick {
					select {
					case kicks <- struct{}{}:
					default:
					}
				}
			}
			for d.usedIdx() != uint16(total%65536) {
				select {
				case <-irqs:
				case <-time.After(100 * time.Millisecond):
					// Not a lost interrupt if it was suppressed by our
					// own used_event; check the ring once more.
					if d.usedIdx() != uint16(total%65536) {
						select {
						case <-deadline:
							t.Fatalf("used idx %d, want %d", d.usedIdx(), total%65536)
						default:
						}
					}
				}
			}
			close(stop)
			<-devDone
			st := q.Stats()
			t.Logf("popped %d, interrupts %d sent %d suppressed", st.Popped.Load(), st.Interrupts.Load(), st.Suppressed.Load())
		})
	}
}
