package virtiotest

import (
	"sync"

	"github.com/govmm/govmm/virtio"
)

// Driver records what a device reports through its Activation.
type Driver struct {
	mu            sync.Mutex
	needsReset    []error
	configChanges int
}

// Activation returns an Activation over queues (nil entries for disabled
// queues) whose callbacks record into d.
func (d *Driver) Activation(features uint64, queues ...*Queue) virtio.Activation {
	qs := make([]virtio.QueueIO, len(queues))
	for i, q := range queues {
		if q != nil { // a nil *Queue must become a nil interface
			qs[i] = q
		}
	}
	return virtio.Activation{
		Features: features,
		Queues:   qs,
		NeedsReset: func(err error) {
			d.mu.Lock()
			d.needsReset = append(d.needsReset, err)
			d.mu.Unlock()
		},
		ConfigChanged: func() {
			d.mu.Lock()
			d.configChanges++
			d.mu.Unlock()
		},
	}
}

// NeedsReset lists the errors passed to NeedsReset.
func (d *Driver) NeedsReset() []error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]error(nil), d.needsReset...)
}

// ConfigChanges counts ConfigChanged calls.
func (d *Driver) ConfigChanges() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.configChanges
}
