// Package virtio is govmm's virtio 1.x: split virtqueues (queue.go), the
// modern PCI transport (transport.go) and the contract between the
// transport and a device backend (this file). Device backends live in
// subpackages (virtio/blk, virtio/console); each runs on its own
// goroutines, never on a vCPU thread.
//
// The contract: the transport owns feature negotiation, the device status
// machine, queue configuration and reset. When the driver sets DRIVER_OK
// the transport calls Device.Activate with one QueueIO per queue the driver
// enabled; the device serves them on its own goroutines until Reset. A
// device that finds the driver broke the protocol (a chain that loops,
// leaves guest RAM, has the wrong directions) calls Activation.NeedsReset:
// the transport sets DEVICE_NEEDS_RESET and sends a configuration-change
// interrupt, and the device stops serving the queue (virtio 1.2 §2.1.2).
package virtio

import "errors"

// DeviceType is a virtio device ID (virtio 1.2 §5).
type DeviceType uint16

const (
	TypeBlock   DeviceType = 2
	TypeConsole DeviceType = 3
)

// Transport feature bits (virtio 1.2 §6) that the transport itself offers
// and negotiates; devices name only their own bits (below 24).
const (
	FeatureIndirectDesc = 1 << 28 // VIRTIO_F_INDIRECT_DESC
	FeatureEventIdx     = 1 << 29 // VIRTIO_F_EVENT_IDX
	FeatureVersion1     = 1 << 32 // VIRTIO_F_VERSION_1
)

// Device is a virtio device backend as the transport drives it. Methods
// are called by the transport, serialized (never two at once), from vCPU
// threads; Activate's queues are then served on the device's own goroutines.
type Device interface {
	// Type is the virtio device ID.
	Type() DeviceType
	// Features are the device-specific feature bits offered (bits 0-23).
	Features() uint64
	// QueueSizes gives each queue's maximum size (a power of two, at most
	// 32768); its length is the number of queues.
	QueueSizes() []uint16
	// ReadConfig and WriteConfig serve the device-specific configuration
	// structure (off from its start; reads past its end read zeros, such
	// writes are ignored).
	ReadConfig(off uint64, data []byte)
	WriteConfig(off uint64, data []byte)
	// Activate starts serving: a.Queues[i] is queue i (nil if the driver
	// did not enable it). An error means the device cannot run (the
	// transport sets DEVICE_NEEDS_RESET).
	Activate(a Activation) error
	// Reset stops every goroutine Activate started, waits for them, and
	// returns the device to its initial state. Requests already completed
	// (pushed to the used ring) stay completed; none is half done. A
	// device keeps nothing of an activation but its goroutines (its
	// configuration and pending input stay), so that Activate with the
	// same queues after Reset goes on where it stopped: how a snapshot
	// suspends and resumes it (PCITransport.Suspend).
	Reset()
}

// Activation is what a device is given when the driver sets DRIVER_OK.
type Activation struct {
	// Features are the negotiated feature bits (device and transport).
	Features uint64
	// Queues holds one entry per queue of Device.QueueSizes; nil for a
	// queue the driver left disabled.
	Queues []QueueIO
	// NeedsReset reports a driver error (err says what, for the log and
	// the accounting); the transport sets DEVICE_NEEDS_RESET.
	NeedsReset func(err error)
	// ConfigChanged sends the configuration-change interrupt (a device
	// whose configuration changed, e.g. a console's size).
	ConfigChanged func()
}

// QueueIO is one enabled virtqueue as a device backend serves it. A queue
// is served by one goroutine at a time (the device's choice which); the
// transport's own calls (reset) are synchronized with it by Device.Reset.
type QueueIO interface {
	// Kicks delivers one value per driver notification (coalesced: one
	// value may stand for several). It is closed when the queue is reset.
	Kicks() <-chan struct{}
	// Pop takes the next available descriptor chain, or returns nil, nil
	// when the ring is empty. An error (wrapping ErrBadChain) means the
	// driver broke the ring: the device calls NeedsReset and stops.
	Pop() (*Chain, error)
	// Push returns chain c to the driver with written bytes written to its
	// device-writable buffers, and adds it to the used ring.
	Push(c *Chain, written uint32) error
	// Interrupt signals the driver that used buffers are there, unless
	// event index / NO_INTERRUPT says it asked not to be (counted as
	// suppressed). Call it after a batch of Pushes.
	Interrupt()
	// DisableKicks and EnableKicks bracket a batch: between them the
	// driver is asked not to notify (VRING_USED_F_NO_NOTIFY or avail event).
	// EnableKicks reports whether buffers arrived meanwhile (the device
	// must then Pop again before waiting).
	DisableKicks()
	EnableKicks() (more bool)
}

// Chain is one descriptor chain: its buffers, in chain order, as slices of
// guest RAM (they alias guest memory: valid until Push).
type Chain struct {
	Head     uint16   // index of the chain's first descriptor
	Readable [][]byte // device-readable buffers (driver to device), first
	Writable [][]byte // device-writable buffers (device to driver), after
}

// ReadableLen and WritableLen are the total sizes.
func (c *Chain) ReadableLen() int { return totalLen(c.Readable) }
func (c *Chain) WritableLen() int { return totalLen(c.Writable) }

func totalLen(bs [][]byte) int {
	n := 0
	for _, b := range bs {
		n += len(b)
	}
	return n
}

// ErrBadChain is what every ring-format violation wraps.
var ErrBadChain = errors.New("virtio: malformed descriptor chain")

// Memory is guest RAM as the queues reach it (*memory.Memory).
type Memory interface {
	// Slice returns the host bytes of [gpa, gpa+n), an error if that is
	// not all RAM.
	Slice(gpa, n uint64) ([]byte, error)
}
