package virtio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Split virtqueue layout (virtio 1.2 §2.7).
const (
	descSize = 16 // struct virtq_desc: addr le64, len le32, flags le16, next le16

	descFNext     = 1 // VIRTQ_DESC_F_NEXT
	descFWrite    = 2 // VIRTQ_DESC_F_WRITE
	descFIndirect = 4 // VIRTQ_DESC_F_INDIRECT

	availFNoInterrupt = 1 // VRING_AVAIL_F_NO_INTERRUPT
	usedFNoNotify     = 1 // VRING_USED_F_NO_NOTIFY

	// MaxQueueSize is the largest split queue (virtio 1.2 §2.7: 32768).
	MaxQueueSize = 32768
	// maxIndirect bounds an indirect table: the spec bounds it only by
	// the queue size of the driver that built it; 32768 entries (512 KiB)
	// is Linux's and QEMU's bound and keeps one chain's walk bounded.
	maxIndirect = 32768
)

// QueueConfig is a queue's configuration as the driver negotiated it.
type QueueConfig struct {
	Size     uint16 // a power of two, at most MaxQueueSize
	Desc     uint64 // descriptor table GPA (16-aligned)
	Driver   uint64 // driver area (available ring) GPA (2-aligned)
	Device   uint64 // device area (used ring) GPA (4-aligned)
	EventIdx bool   // VIRTIO_F_EVENT_IDX negotiated
	Indirect bool   // VIRTIO_F_INDIRECT_DESC negotiated
	// Stats receives the queue's counters; nil gives the queue its own.
	// The transport passes counters that outlive a reset.
	Stats *QueueStats
	// Ring, when set, is where a restored queue's device side stood
	// (Queue.Ring at the snapshot): the used ring in guest memory is left
	// as the driver sees it, not started again at 0.
	Ring *QueueRing
}

// QueueRing is a queue's device-side position, which guest memory does
// not hold: a snapshot's part of a queue. A queue is saved stopped between
// chains (none in flight), its last batch's interrupt sent.
type QueueRing struct {
	LastAvail      uint16 // next avail ring entry to take
	UsedIdx        uint16 // our used idx
	UsedFlags      uint16 // our used.flags
	KicksOff       bool   // between DisableKicks and EnableKicks
	Signalled      uint16 // used idx at the last Interrupt (event idx)
	SignalledValid bool
}

// Ring is the queue's position, for a snapshot: the serving goroutine
// must be stopped (Device.Reset), so that nothing is in flight.
func (q *Queue) Ring() (QueueRing, error) {
	if q.inflight != 0 || q.pushedUnsent {
		return QueueRing{}, fmt.Errorf("virtio: queue saved with %d chains in flight", q.inflight)
	}
	return QueueRing{LastAvail: q.lastAvail, UsedIdx: q.usedIdx, UsedFlags: q.usedFlags, KicksOff: q.kicksOff,
		Signalled: q.signalled, SignalledValid: q.signalledValid}, nil
}

// QueueStats are one queue's counters (atomic: read them any time).
type QueueStats struct {
	Kicks      atomic.Uint64 // driver notifications (eventfd counts, both paths)
	Wakeups    atomic.Uint64 // values sent to Kicks (coalesced notifications)
	Popped     atomic.Uint64 // chains taken from the avail ring
	Pushed     atomic.Uint64 // chains put on the used ring
	Interrupts atomic.Uint64 // queue interrupts sent
	Suppressed atomic.Uint64 // queue interrupts the driver asked not to get
	NoVector   atomic.Uint64 // interrupts sent while the queue had no MSI-X vector
	BadChains  atomic.Uint64 // Pop errors
	// BusySince is when the chain the device serves now was popped
	// (UnixNano; 0: none in hand): what the VMM's watchdog reads to tell a
	// device thread stuck in one request (vmm/watchdog.go).
	BusySince atomic.Int64
}

// markBusy is set around each handler call by Serve's loop.
func (q *Queue) markBusy(on bool) {
	if on {
		q.stats.BusySince.Store(time.Now().UnixNano())
	} else {
		q.stats.BusySince.Store(0)
	}
}

// Queue is a split virtqueue over guest memory; it implements QueueIO.
//
// Concurrency: the configuration fields are immutable after NewQueue. The
// ring state below them belongs to the one goroutine serving the queue
// (QueueIO's contract), so it has no lock. Guest RAM is shared with the
// driver: the words both sides write are accessed atomically (ringmem.go).
type Queue struct {
	size      uint16
	mask      uint16
	eventIdx  bool
	indirect  bool
	mem       Memory
	interrupt func()
	kicks     <-chan struct{}
	stats     *QueueStats

	// desc, avail and used are the rings in guest RAM; availOff and
	// usedOff are where the rings start in avail and used (ringSlice
	// pads them to whole 32-bit words).
	desc     []byte
	avail    []byte
	availOff int
	used     []byte
	usedOff  int

	// Owned by the serving goroutine.
	lastAvail      uint16 // next avail ring entry to take
	usedIdx        uint16 // our used idx (published to used.idx by Push)
	usedFlags      uint16 // our used.flags (VRING_USED_F_NO_NOTIFY)
	kicksOff       bool   // between DisableKicks and EnableKicks
	pushedUnsent   bool   // Push since the last Interrupt
	signalled      uint16 // used idx at the last Interrupt (event idx)
	signalledValid bool   // false until the first Interrupt
	inflight       int    // popped and not yet pushed
	broken         error  // the first Pop error: the ring stays broken
}

// NewQueue builds a queue from its negotiated configuration. interrupt
// sends the queue's interrupt; kicks is what Kicks returns.
func NewQueue(cfg QueueConfig, mem Memory, interrupt func(), kicks <-chan struct{}) (*Queue, error) {
	n := cfg.Size
	if n == 0 || n > MaxQueueSize || n&(n-1) != 0 {
		return nil, fmt.Errorf("virtio: queue size %d is not a power of two in [1, %d]", n, MaxQueueSize)
	}
	if cfg.Desc%16 != 0 || cfg.Driver%2 != 0 || cfg.Device%4 != 0 {
		return nil, fmt.Errorf("virtio: queue rings misaligned: desc %#x (16), driver %#x (2), device %#x (4)",
			cfg.Desc, cfg.Driver, cfg.Device)
	}
	q := &Queue{
		size: n, mask: n - 1,
		eventIdx: cfg.EventIdx, indirect: cfg.Indirect,
		mem: mem, interrupt: interrupt, kicks: kicks, stats: cfg.Stats,
	}
	if q.stats == nil {
		q.stats = new(QueueStats)
	}
	var err error
	if q.desc, err = mem.Slice(cfg.Desc, uint64(n)*descSize); err != nil {
		return nil, fmt.Errorf("virtio: descriptor table: %w", err)
	}
	if q.avail, q.availOff, err = ringSlice(mem, cfg.Driver, 6+2*uint64(n)); err != nil {
		return nil, fmt.Errorf("virtio: driver area: %w", err)
	}
	if q.used, q.usedOff, err = ringSlice(mem, cfg.Device, 6+8*uint64(n)); err != nil {
		return nil, fmt.Errorf("virtio: device area: %w", err)
	}
	if r := cfg.Ring; r != nil {
		q.lastAvail, q.usedIdx, q.usedFlags, q.kicksOff = r.LastAvail, r.UsedIdx, r.UsedFlags, r.KicksOff
		q.signalled, q.signalledValid = r.Signalled, r.SignalledValid
		return q, nil
	}
	// The driver set up the rings before DRIVER_OK and reset zeroes our
	// state, so both sides start at index 0 (virtio 1.2 §2.7.8.1 writes
	// our initial used.flags/idx word, the driver zeroed it too).
	store32(q.used, q.usedOff, 0)
	if q.eventIdx {
		store16(q.used, q.usedOff+4+8*int(n), 0)
	}
	return q, nil
}

// ringSlice slices [gpa, gpa+n) widened to whole aligned 32-bit words, so
// that ringmem's 16-bit atomics find their word inside the slice; off is
// where gpa is in it. If the widened range is not RAM, the exact one is
// used (then ringmem falls back to plain accesses at the edges).
func ringSlice(mem Memory, gpa, n uint64) ([]byte, int, error) {
	lo, hi := gpa&^3, (gpa+n+3)&^3
	if hi > lo {
		if b, err := mem.Slice(lo, hi-lo); err == nil {
			return b, int(gpa - lo), nil
		}
	}
	b, err := mem.Slice(gpa, n)
	return b, 0, err
}

// Size is the queue size.
func (q *Queue) Size() uint16 { return q.size }

// Stats are the queue's counters.
func (q *Queue) Stats() *QueueStats { return q.stats }

// Kicks implements QueueIO.
func (q *Queue) Kicks() <-chan struct{} { return q.kicks }

// availIdx reads avail.idx. The driver writes it concurrently; the atomic
// load orders our reads of the ring entries after it (the driver wrote
// them before it published idx).
func (q *Queue) availIdx() uint16 { return load16(q.avail, q.availOff+2) }

func (q *Queue) availFlags() uint16 { return load16(q.avail, q.availOff) }

// usedEvent is used_event, the driver's "interrupt me when used idx
// passes this", after the avail ring.
func (q *Queue) usedEvent() uint16 { return load16(q.avail, q.availOff+4+2*int(q.size)) }

// setAvailEvent writes avail_event, our "notify me when avail idx passes
// this", after the used ring.
func (q *Queue) setAvailEvent(v uint16) { store16(q.used, q.usedOff+4+8*int(q.size), v) }

// publishUsed writes the used ring's flags|idx word in one store: both
// halves are ours, and the store is what makes the used elements visible.
func (q *Queue) publishUsed() {
	store32(q.used, q.usedOff, uint32(q.usedFlags)|uint32(q.usedIdx)<<16)
}

func (q *Queue) fail(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrBadChain}, args...)...)
	q.broken = err
	q.stats.BadChains.Add(1)
	return err
}

// Pop implements QueueIO. A ring error is sticky: every later Pop returns
// it (the device is to stop; the driver must reset).
func (q *Queue) Pop() (*Chain, error) {
	if q.broken != nil {
		return nil, q.broken
	}
	idx := q.availIdx()
	pending := idx - q.lastAvail
	if pending == 0 {
		return nil, nil
	}
	if pending > q.size {
		return nil, q.fail("avail idx %d is %d entries past %d, more than the queue size %d",
			idx, pending, q.lastAvail, q.size)
	}
	head := binary.LittleEndian.Uint16(q.avail[q.availOff+4+2*int(q.lastAvail&q.mask):])
	c, err := q.walk(head)
	if err != nil {
		return nil, err
	}
	q.lastAvail++
	q.inflight++
	q.stats.Popped.Add(1)
	if q.eventIdx && !q.kicksOff {
		// Notify me as soon as anything past what I have taken arrives.
		q.setAvailEvent(q.lastAvail)
	}
	return c, nil
}

// walk follows the chain at head. Every descriptor is read once (the
// driver may rewrite the table meanwhile: what we act on is what we
// read), and a count, not a visited set, bounds the walk: a table of n
// descriptors cannot hold a chain longer than n without a loop.
func (q *Queue) walk(head uint16) (*Chain, error) {
	c := &Chain{Head: head}
	table, n := q.desc, uint32(q.size)
	idx := uint32(head)
	inIndirect := false
	seen := uint32(0)
	for {
		where := "descriptor"
		if inIndirect {
			where = "indirect descriptor"
		}
		if idx >= n {
			return nil, q.fail("chain %d: %s index %d outside a table of %d", head, where, idx, n)
		}
		if seen++; seen > n {
			return nil, q.fail("chain %d: longer than its table of %d descriptors (a loop)", head, n)
		}
		d := table[idx*descSize : idx*descSize+descSize]
		addr := binary.LittleEndian.Uint64(d[0:])
		length := binary.LittleEndian.Uint32(d[8:])
		flags := binary.LittleEndian.Uint16(d[12:])
		next := binary.LittleEndian.Uint16(d[14:])

		if flags&descFIndirect != 0 {
			switch {
			case !q.indirect:
				return nil, q.fail("chain %d: INDIRECT descriptor %d but INDIRECT_DESC was not negotiated", head, idx)
			case inIndirect:
				return nil, q.fail("chain %d: INDIRECT descriptor %d inside an indirect table", head, idx)
			case flags&descFNext != 0:
				return nil, q.fail("chain %d: descriptor %d has both INDIRECT and NEXT", head, idx)
			case length == 0 || length%descSize != 0:
				return nil, q.fail("chain %d: indirect table length %d is not a non-zero multiple of 16", head, length)
			case length/descSize > maxIndirect:
				return nil, q.fail("chain %d: indirect table of %d entries exceeds %d", head, length/descSize, maxIndirect)
			}
			t, err := q.mem.Slice(addr, uint64(length))
			if err != nil {
				return nil, q.fail("chain %d: indirect table: %v", head, err)
			}
			// The WRITE flag of the descriptor that points at a table
			// means nothing (virtio 1.2 §2.7.5.3.2: the device ignores it).
			table, n, idx, seen, inIndirect = t, length/descSize, 0, 0, true
			continue
		}

		buf, err := q.mem.Slice(addr, uint64(length))
		if err != nil {
			return nil, q.fail("chain %d: %s %d: %v", head, where, idx, err)
		}
		if flags&descFWrite != 0 {
			c.Writable = append(c.Writable, buf)
		} else {
			if len(c.Writable) > 0 {
				return nil, q.fail("chain %d: device-readable %s %d after a device-writable one", head, where, idx)
			}
			c.Readable = append(c.Readable, buf)
		}
		if flags&descFNext == 0 {
			return c, nil
		}
		idx = uint32(next)
	}
}

var errPushNil = errors.New("virtio: Push of a nil chain")

// Push implements QueueIO. written is clamped to the chain's writable
// size: the driver is never told of bytes that are not in its buffers.
func (q *Queue) Push(c *Chain, written uint32) error {
	if c == nil {
		return errPushNil
	}
	if q.inflight == 0 {
		return fmt.Errorf("virtio: Push of chain %d with no chain outstanding", c.Head)
	}
	if uint32(q.size) <= uint32(c.Head) {
		return fmt.Errorf("virtio: Push of chain %d, past the queue size %d", c.Head, q.size)
	}
	if w := c.WritableLen(); uint64(written) > uint64(w) {
		written = uint32(w)
	}
	e := q.used[q.usedOff+4+8*int(q.usedIdx&q.mask):]
	binary.LittleEndian.PutUint32(e[0:], uint32(c.Head))
	binary.LittleEndian.PutUint32(e[4:], written)
	q.usedIdx++
	q.inflight--
	q.pushedUnsent = true
	q.publishUsed()
	q.stats.Pushed.Add(1)
	return nil
}

// vringNeedEvent is virtio 1.2 §2.7.7.2's test: has idx moved from old to
// new past event? (All mod 2^16.)
func vringNeedEvent(event, new, old uint16) bool {
	return new-event-1 < new-old
}

// Interrupt implements QueueIO. Nothing pushed since the last call: no
// interrupt, not counted.
func (q *Queue) Interrupt() {
	if !q.pushedUnsent {
		return
	}
	q.pushedUnsent = false
	// publishUsed's store is sequentially consistent with the loads
	// below: the driver either sees our used idx or we see its new
	// used_event / flags (the fence virtio 1.2 §2.7.10 asks for).
	var send bool
	if q.eventIdx {
		old := q.signalled
		send = !q.signalledValid || vringNeedEvent(q.usedEvent(), q.usedIdx, old)
		q.signalled, q.signalledValid = q.usedIdx, true
	} else {
		send = q.availFlags()&availFNoInterrupt == 0
	}
	if !send {
		q.stats.Suppressed.Add(1)
		return
	}
	q.stats.Interrupts.Add(1)
	if q.interrupt != nil {
		q.interrupt()
	}
}

// DisableKicks implements QueueIO.
func (q *Queue) DisableKicks() {
	if q.kicksOff {
		return
	}
	q.kicksOff = true
	if q.eventIdx {
		// One behind what we have taken: the driver's next avail idx
		// cannot pass it (it is at or past lastAvail) for 65535 entries.
		q.setAvailEvent(q.lastAvail - 1)
		return
	}
	q.usedFlags |= usedFNoNotify
	q.publishUsed()
}

// EnableKicks implements QueueIO.
func (q *Queue) EnableKicks() (more bool) {
	q.kicksOff = false
	if q.eventIdx {
		q.setAvailEvent(q.lastAvail)
	} else {
		q.usedFlags &^= usedFNoNotify
		q.publishUsed()
	}
	// The store above and this load are sequentially consistent
	// (sync/atomic): a buffer the driver added without notifying (it saw
	// the old flags) is seen here.
	return q.availIdx() != q.lastAvail
}

var _ QueueIO = (*Queue)(nil)
