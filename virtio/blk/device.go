// Package blk is a virtio block device (virtio 1.2 §5.2) backed by a disk
// image file or block device, one goroutine per request queue.
package blk

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/virtio"
)

// Options configure a block device.
type Options struct {
	ReadOnly bool   // open O_RDONLY, offer VIRTIO_BLK_F_RO, answer writes IOERR
	Queues   int    // request queues (VIRTIO_BLK_F_MQ num_queues), at least 1
	Serial   string // GET_ID's answer, at most 20 bytes
}

// Device is a virtio block device; it implements virtio.Device.
type Device struct {
	// Set by Open, then read-only until Close.
	img      *image
	readOnly bool
	queues   int
	serial   [serialLen]byte
	config   [configSize]byte
	counters []queueCounters // one per queue, each written by its goroutine only

	// The running activation. The transport serializes Activate and Reset,
	// and Close must not overlap them: these need no lock.
	stop    chan struct{} // closed by Reset to stop the goroutines; nil when inactive
	serving sync.WaitGroup
}

var _ virtio.Device = (*Device)(nil)

// Open opens the image at path.
func Open(path string, o Options) (*Device, error) {
	if o.Queues < 1 || o.Queues > 0xffff {
		return nil, fmt.Errorf("blk: %d queues, want 1 to 65535", o.Queues)
	}
	if len(o.Serial) > serialLen {
		return nil, fmt.Errorf("blk: serial %q is longer than %d bytes", o.Serial, serialLen)
	}
	img, err := openImage(path, o.ReadOnly)
	if err != nil {
		return nil, err
	}
	d := &Device{
		img:      img,
		readOnly: o.ReadOnly,
		queues:   o.Queues,
		counters: make([]queueCounters, o.Queues),
	}
	copy(d.serial[:], o.Serial)
	d.config = buildConfig(uint64(img.size)/sectorSize, o.Queues)
	return d, nil
}

// Close stops the device if active and closes the image.
func (d *Device) Close() error {
	d.Reset()
	return d.img.close()
}

// Direct reports whether the image could be opened with O_DIRECT: aligned
// requests then bypass the host page cache.
func (d *Device) Direct() bool { return d.img.direct != nil }

// Stats returns each queue's counters (safe from any goroutine).
func (d *Device) Stats() []QueueStats {
	s := make([]QueueStats, len(d.counters))
	for i := range d.counters {
		s[i] = d.counters[i].snapshot()
	}
	return s
}

// Type implements virtio.Device.
func (d *Device) Type() virtio.DeviceType { return virtio.TypeBlock }

// Features implements virtio.Device.
func (d *Device) Features() uint64 {
	f := uint64(featureSegMax | featureBlkSize | featureFlush | featureMQ)
	if d.readOnly {
		f |= featureRO
	}
	return f
}

// QueueSizes implements virtio.Device.
func (d *Device) QueueSizes() []uint16 {
	s := make([]uint16, d.queues)
	for i := range s {
		s[i] = queueSize
	}
	return s
}

// ReadConfig implements virtio.Device.
func (d *Device) ReadConfig(off uint64, data []byte) { readConfig(d.config[:], off, data) }

// WriteConfig implements virtio.Device: nothing in the block configuration
// is writable without VIRTIO_BLK_F_CONFIG_WCE, which we do not offer.
func (d *Device) WriteConfig(off uint64, data []byte) {}

// Activate implements virtio.Device: each enabled queue gets its own
// goroutine.
func (d *Device) Activate(a virtio.Activation) error {
	if d.stop != nil {
		return errors.New("blk: activated twice without a reset")
	}
	if len(a.Queues) > d.queues {
		return fmt.Errorf("blk: %d queues activated, the device has %d", len(a.Queues), d.queues)
	}
	d.stop = make(chan struct{})
	for i, q := range a.Queues {
		if q == nil {
			continue
		}
		d.serving.Add(1)
		go d.serveQueue(i, q, a.NeedsReset, d.stop)
	}
	return nil
}

func (d *Device) serveQueue(i int, q virtio.QueueIO, needsReset func(error), stop <-chan struct{}) {
	defer d.serving.Done()
	qc := &d.counters[i]
	err := virtio.Serve(q, stop, func(c *virtio.Chain) (uint32, error) { return d.serve(qc, c) })
	if err != nil && needsReset != nil {
		needsReset(fmt.Errorf("blk: queue %d: %w", i, err))
	}
}

// Reset implements virtio.Device: it stops the queue goroutines and waits
// for them; each finishes the request it is serving first.
func (d *Device) Reset() {
	if d.stop == nil {
		return
	}
	close(d.stop)
	d.serving.Wait()
	d.stop = nil
}

// Flush writes what the image's page cache holds back to the file
// (fdatasync), for a snapshot taken with the device suspended: the file
// the manifest names then holds every write the guest was told of.
func (d *Device) Flush() error {
	if d.img.buffered == nil {
		return nil
	}
	return fdatasync(d.img.bufferedFD)
}

// Size is the image's size in bytes.
func (d *Device) Size() int64 { return d.img.size }

func fdatasync(fd int) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}
