// Package console is a single-port virtio console (virtio 1.2 §5.3)
// without VIRTIO_CONSOLE_F_MULTIPORT: queue 0 carries input to the guest,
// queue 1 its output.
package console

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/govmm/govmm/virtio"
)

const (
	featureSize = 1 << 0 // VIRTIO_CONSOLE_F_SIZE

	receiveq  = 0 // port 0 receiveq: device-writable buffers, host to guest
	transmitq = 1 // port 0 transmitq: device-readable buffers, guest to host

	queueSize = 128

	// struct virtio_console_config: cols, rows (F_SIZE), max_nr_ports
	// (F_MULTIPORT), emerg_wr (F_EMERG_WRITE).
	cfgCols    = 0
	cfgRows    = 2
	configSize = 12
)

// errNotWritable is a receive chain with no byte to put input in: its
// buffers have the wrong direction.
var errNotWritable = fmt.Errorf("console: receive chain without device-writable buffers: %w", virtio.ErrBadChain)

// Device is a virtio console; it implements virtio.Device.
type Device struct {
	out io.Writer // written only by the transmitq goroutine
	// gather joins a multi-buffer transmit chain for its one Write; used
	// only by the transmitq goroutine (one at a time: Reset joins it).
	gather []byte
	in     *input
	stats  counters

	// mu guards the size and the activation's ConfigChanged, which SetSize
	// (any goroutine) and the transport's calls share.
	mu            sync.Mutex
	cols, rows    uint16
	configChanged func() // nil when inactive or F_SIZE not negotiated

	// The transport serializes Activate and Reset: these need no lock.
	stop    chan struct{} // closed by Reset; nil when inactive
	serving sync.WaitGroup
}

var _ virtio.Device = (*Device)(nil)

// New returns a console whose guest output goes to out.
func New(out io.Writer) *Device {
	return &Device{out: out, in: newInput()}
}

// Input queues b for the guest (from any goroutine; b is copied). It is
// delivered in order once the guest posts receive buffers, never dropped.
func (d *Device) Input(b []byte) { d.in.add(b) }

// SetSize sets the console size the guest reads (VIRTIO_CONSOLE_F_SIZE)
// and, if the driver negotiated it, sends a configuration change.
func (d *Device) SetSize(cols, rows uint16) {
	d.mu.Lock()
	d.cols, d.rows = cols, rows
	notify := d.configChanged
	d.mu.Unlock()
	if notify != nil {
		notify()
	}
}

// Stats returns the console's counters (safe from any goroutine).
func (d *Device) Stats() Stats { return d.stats.snapshot() }

// Type implements virtio.Device.
func (d *Device) Type() virtio.DeviceType { return virtio.TypeConsole }

// Features implements virtio.Device.
func (d *Device) Features() uint64 { return featureSize }

// QueueSizes implements virtio.Device.
func (d *Device) QueueSizes() []uint16 { return []uint16{queueSize, queueSize} }

// ReadConfig implements virtio.Device.
func (d *Device) ReadConfig(off uint64, data []byte) {
	var c [configSize]byte
	d.mu.Lock()
	binary.LittleEndian.PutUint16(c[cfgCols:], d.cols)
	binary.LittleEndian.PutUint16(c[cfgRows:], d.rows)
	d.mu.Unlock()
	clear(data)
	if off < configSize {
		copy(data, c[off:])
	}
}

// WriteConfig implements virtio.Device: emerg_wr is the only writable
// field, and VIRTIO_CONSOLE_F_EMERG_WRITE is not offered.
func (d *Device) WriteConfig(off uint64, data []byte) {}

// Activate implements virtio.Device: a goroutine per enabled queue.
func (d *Device) Activate(a virtio.Activation) error {
	if d.stop != nil {
		return errors.New("console: activated twice without a reset")
	}
	if len(a.Queues) > 2 {
		return fmt.Errorf("console: %d queues activated, the device has 2", len(a.Queues))
	}
	stop := make(chan struct{})
	d.stop = stop
	if a.Features&featureSize != 0 {
		d.mu.Lock()
		d.configChanged = a.ConfigChanged
		d.mu.Unlock()
	}
	queue := func(i int) virtio.QueueIO {
		if i < len(a.Queues) {
			return a.Queues[i]
		}
		return nil
	}
	if q := queue(receiveq); q != nil {
		d.run(q, a.NeedsReset, func() error {
			return virtio.ServeWhen(q, stop, d.in.wake, d.in.ready, d.receive)
		})
	}
	if q := queue(transmitq); q != nil {
		d.run(q, a.NeedsReset, func() error { return virtio.Serve(q, stop, d.transmit) })
	}
	return nil
}

func (d *Device) run(q virtio.QueueIO, needsReset func(error), serve func() error) {
	d.serving.Add(1)
	go func() {
		defer d.serving.Done()
		if err := serve(); err != nil && needsReset != nil {
			needsReset(err)
		}
	}()
}

// receive fills one receive chain with pending input.
func (d *Device) receive(c *virtio.Chain) (uint32, error) {
	if c.WritableLen() == 0 {
		return 0, errNotWritable
	}
	n := d.in.fill(c.Writable)
	d.stats.bytesIn.Add(uint64(n))
	d.stats.chains.Add(1)
	return uint32(n), nil
}

// transmit writes one transmit chain's bytes to out in one Write, so a
// line the guest sent in one chain is not interleaved with anything else
// written to out.
func (d *Device) transmit(c *virtio.Chain) (uint32, error) {
	var b []byte
	nonEmpty := 0
	for _, r := range c.Readable {
		if len(r) > 0 {
			b = r
			nonEmpty++
		}
	}
	if nonEmpty > 1 {
		// Several buffers: gather them (Linux sends one per chain, so this
		// copy is rare).
		d.gather = d.gather[:0]
		for _, r := range c.Readable {
			d.gather = append(d.gather, r...)
		}
		b = d.gather
	}
	if len(b) > 0 {
		// b may alias guest RAM: out must be done with it when Write
		// returns (io.Writer's contract).
		n, err := d.out.Write(b)
		d.stats.bytesOut.Add(uint64(n))
		if err != nil {
			d.stats.outErrors.Add(1)
		}
	}
	d.stats.chains.Add(1)
	return 0, nil
}

// Reset implements virtio.Device: it stops the queue goroutines and waits
// for them. Input not yet given to the guest stays for the next
// activation; the size stays too (it is the host's, not the driver's).
func (d *Device) Reset() {
	d.mu.Lock()
	d.configChanged = nil
	d.mu.Unlock()
	if d.stop == nil {
		return
	}
	close(d.stop)
	d.serving.Wait()
	d.stop = nil
}

// Saved is a console's state in a snapshot: its size and the input not
// yet delivered to the guest.
type Saved struct {
	Cols, Rows uint16
	Input      []byte `json:",omitempty"`
}

// Save returns the console's state (the transport suspended: no receive
// chain is being filled).
func (d *Device) Save() Saved {
	d.mu.Lock()
	s := Saved{Cols: d.cols, Rows: d.rows}
	d.mu.Unlock()
	d.in.mu.Lock()
	s.Input = append([]byte(nil), d.in.pending...)
	d.in.mu.Unlock()
	return s
}

// Restore makes s the console's state before the VM runs: the saved input
// goes to the guest first, before anything typed after the restore.
func (d *Device) Restore(s Saved) {
	d.mu.Lock()
	d.cols, d.rows = s.Cols, s.Rows
	d.mu.Unlock()
	d.in.mu.Lock()
	d.in.pending = append(append([]byte(nil), s.Input...), d.in.pending...)
	d.in.mu.Unlock()
	select {
	case d.in.wake <- struct{}{}:
	default:
	}
}
