// This file saves and restores a transport for a snapshot: the common
// configuration as the driver left it, and each running queue's device
// side (QueueRing). Suspend stops the device's goroutines between
// requests first, so that nothing is in flight; Resume starts them again.

package virtio

import (
	"errors"
	"fmt"
)

// TransportSaved is a transport's state in a snapshot.
type TransportSaved struct {
	Status                 uint8
	DevFeatSel, DrvFeatSel uint32
	DrvFeat                uint64
	QueueSel               uint16
	ConfigVector           uint32
	NeedsReset             bool
	ISR                    uint32
	Generation             uint32
	Active                 bool
	Queues                 []QueueSaved
}

// QueueSaved is one queue's common-configuration registers, and where its
// device side stood if it was running.
type QueueSaved struct {
	Size                 uint16
	Enabled              bool
	Desc, Driver, Device uint64
	Vector               uint32
	Ring                 *QueueRing `json:",omitempty"`
}

// Suspend stops the device's goroutines, each between two requests
// (Device.Reset: what it completed is in the used ring, its last batch's
// interrupt sent), and keeps the queues: the snapshot's pause. Notifies
// meanwhile wait in the kick channels.
func (t *PCITransport) Suspend() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active && !t.suspended {
		t.dev.Reset()
		t.suspended = true
	}
}

// Resume starts the device again on the queues Suspend kept.
func (t *PCITransport) Resume() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.suspended {
		return nil
	}
	t.suspended = false
	if err := t.dev.Activate(t.act); err != nil {
		t.setNeedsReset(t.epoch.Load(), fmt.Errorf("virtio: resume: %w", err))
		return err
	}
	return nil
}

// Save returns the transport's state; a running device must be suspended.
func (t *PCITransport) Save() (TransportSaved, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active && !t.suspended {
		return TransportSaved{}, errors.New("virtio: saved while its device runs (Suspend first)")
	}
	s := TransportSaved{Status: t.status, DevFeatSel: t.devFeatSel, DrvFeatSel: t.drvFeatSel, DrvFeat: t.drvFeat,
		QueueSel: t.queueSel, ConfigVector: t.configVector.Load(), NeedsReset: t.needsReset.Load(),
		ISR: t.isr.Load(), Generation: t.generation.Load(), Active: t.active}
	for i, q := range t.queues {
		qs := QueueSaved{Size: q.size, Enabled: q.enabled, Desc: q.desc, Driver: q.driver, Device: q.device, Vector: q.vector.Load()}
		if t.active && i < len(t.rings) && t.rings[i] != nil {
			r, err := t.rings[i].Ring()
			if err != nil {
				return TransportSaved{}, fmt.Errorf("queue %d: %w", i, err)
			}
			qs.Ring = &r
		}
		s.Queues = append(s.Queues, qs)
	}
	return s, nil
}

// Restore makes s the transport's state, before the VM runs. A device
// that was running gets its queues where they stood, suspended: Resume
// starts it, once the vCPUs have their state back (its first interrupt
// must find their LAPICs restored). A state of another device's shape
// (another number of queues) is refused with the transport left reset.
func (t *PCITransport) Restore(s TransportSaved) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.active {
		t.teardownLocked()
	}
	t.clearLocked()
	if len(s.Queues) != len(t.queues) {
		return fmt.Errorf("virtio: saved transport has %d queues, the device %d", len(s.Queues), len(t.queues))
	}
	// Any queue_size is kept as the driver wrote it, as the register does
	// (a size no queue can have makes DRIVER_OK fail, and a running
	// queue's is checked again when it is built).
	t.status, t.devFeatSel, t.drvFeatSel, t.drvFeat, t.queueSel = s.Status, s.DevFeatSel, s.DrvFeatSel, s.DrvFeat, s.QueueSel
	t.configVector.Store(s.ConfigVector)
	t.needsReset.Store(s.NeedsReset)
	t.isr.Store(s.ISR)
	t.generation.Store(s.Generation)
	rings := make([]*QueueRing, len(s.Queues))
	for i, q := range s.Queues {
		d := t.queues[i]
		d.size, d.enabled, d.desc, d.driver, d.device = q.Size, q.Enabled, q.Desc, q.Driver, q.Device
		d.vector.Store(q.Vector)
		rings[i] = q.Ring
	}
	if s.Active {
		t.startLocked(rings, true)
		if !t.active {
			return fmt.Errorf("virtio: restoring the running device: %s", t.stats.LastError())
		}
	}
	return nil
}
