package virtio

import (
	"errors"
	"fmt"
)

// struct virtio_pci_common_cfg (virtio 1.2 §4.1.4.3): offset and width.
// An access must be exactly one field at its width (the 64-bit queue
// addresses as two 32-bit halves, as the spec has drivers do); any other
// access reads 0 and is ignored: the spec leaves it undefined, and
// ignoring it can never half-apply a value.
const (
	ccDeviceFeatureSelect = 0x00 // 4
	ccDeviceFeature       = 0x04 // 4, RO
	ccDriverFeatureSelect = 0x08 // 4
	ccDriverFeature       = 0x0C // 4
	ccMSIXConfig          = 0x10 // 2
	ccNumQueues           = 0x12 // 2, RO
	ccDeviceStatus        = 0x14 // 1
	ccConfigGeneration    = 0x15 // 1, RO
	ccQueueSelect         = 0x16 // 2
	ccQueueSize           = 0x18 // 2
	ccQueueMSIXVector     = 0x1A // 2
	ccQueueEnable         = 0x1C // 2
	ccQueueNotifyOff      = 0x1E // 2, RO
	ccQueueDescLo         = 0x20 // 4 each
	ccQueueDescHi         = 0x24
	ccQueueDriverLo       = 0x28
	ccQueueDriverHi       = 0x2C
	ccQueueDeviceLo       = 0x30
	ccQueueDeviceHi       = 0x34
	ccQueueNotifyData     = 0x38 // 2, RO
	ccQueueReset          = 0x3A // 2 (VIRTIO_F_RING_RESET is not offered: reads 0)
)

func commonWidth(off uint64) int {
	switch off {
	case ccDeviceFeatureSelect, ccDeviceFeature, ccDriverFeatureSelect, ccDriverFeature,
		ccQueueDescLo, ccQueueDescHi, ccQueueDriverLo, ccQueueDriverHi, ccQueueDeviceLo, ccQueueDeviceHi:
		return 4
	case ccMSIXConfig, ccNumQueues, ccQueueSelect, ccQueueSize, ccQueueMSIXVector,
		ccQueueEnable, ccQueueNotifyOff, ccQueueNotifyData, ccQueueReset:
		return 2
	case ccDeviceStatus, ccConfigGeneration:
		return 1
	}
	return 0
}

// selected is the queue queue_select names, nil if there is none (its
// registers then read 0, queue_size 0 telling the driver so).
func (t *PCITransport) selected() *queueState {
	if int(t.queueSel) < len(t.queues) {
		return t.queues[t.queueSel]
	}
	return nil
}

func (t *PCITransport) statusLocked() uint8 {
	s := t.status
	if t.needsReset.Load() {
		s |= StatusNeedsReset
	}
	return s
}

func (t *PCITransport) readCommonLocked(off uint64, n int) (uint64, bool) {
	if commonWidth(off) != n {
		return 0, false
	}
	q := t.selected()
	switch off {
	case ccDeviceFeatureSelect:
		return uint64(t.devFeatSel), true
	case ccDeviceFeature:
		return featureWord(t.offered, t.devFeatSel), true
	case ccDriverFeatureSelect:
		return uint64(t.drvFeatSel), true
	case ccDriverFeature:
		return featureWord(t.drvFeat, t.drvFeatSel), true
	case ccMSIXConfig:
		return uint64(t.configVector.Load()), true
	case ccNumQueues:
		return uint64(len(t.queues)), true
	case ccDeviceStatus:
		return uint64(t.statusLocked()), true
	case ccConfigGeneration:
		return uint64(uint8(t.generation.Load())), true
	case ccQueueSelect:
		return uint64(t.queueSel), true
	case ccQueueReset:
		return 0, true
	}
	if q == nil {
		return 0, true
	}
	switch off {
	case ccQueueSize:
		return uint64(q.size), true
	case ccQueueMSIXVector:
		return uint64(q.vector.Load()), true
	case ccQueueEnable:
		return b2u(q.enabled), true
	case ccQueueNotifyOff, ccQueueNotifyData:
		return uint64(t.queueSel), true
	case ccQueueDescLo:
		return q.desc & 0xFFFFFFFF, true
	case ccQueueDescHi:
		return q.desc >> 32, true
	case ccQueueDriverLo:
		return q.driver & 0xFFFFFFFF, true
	case ccQueueDriverHi:
		return q.driver >> 32, true
	case ccQueueDeviceLo:
		return q.device & 0xFFFFFFFF, true
	case ccQueueDeviceHi:
		return q.device >> 32, true
	}
	return 0, true
}

func featureWord(f uint64, sel uint32) uint64 {
	switch sel {
	case 0:
		return f & 0xFFFFFFFF
	case 1:
		return f >> 32
	}
	return 0
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func setHalf(v *uint64, hi bool, w uint64) {
	if hi {
		*v = *v&0xFFFFFFFF | w<<32
	} else {
		*v = *v&^0xFFFFFFFF | w&0xFFFFFFFF
	}
}

// vector is what a write of v to an MSI-X vector register stores: a
// vector the table does not have reads back NO_VECTOR (virtio 1.2
// §4.1.5.1.2: the driver learns the mapping failed).
func (t *PCITransport) vector(v uint64) uint32 {
	if t.msix == nil || v >= uint64(t.msix.Vectors()) {
		return NoVector
	}
	return uint32(v)
}

var errFeatures = errors.New("virtio: driver features rejected")

func (t *PCITransport) writeCommonLocked(off uint64, n int, v uint64) {
	if commonWidth(off) != n {
		return
	}
	switch off {
	case ccDeviceFeatureSelect:
		t.devFeatSel = uint32(v)
		return
	case ccDriverFeatureSelect:
		t.drvFeatSel = uint32(v)
		return
	case ccDriverFeature:
		// Features are fixed once FEATURES_OK is (virtio 1.2 §3.1.1).
		if t.status&StatusFeaturesOK == 0 && t.drvFeatSel < 2 {
			setHalf(&t.drvFeat, t.drvFeatSel == 1, v)
		}
		return
	case ccMSIXConfig:
		t.configVector.Store(t.vector(v))
		return
	case ccDeviceStatus:
		t.writeStatusLocked(uint8(v))
		return
	case ccQueueSelect:
		t.queueSel = uint16(v)
		return
	}
	q := t.selected()
	if q == nil {
		return
	}
	if off == ccQueueMSIXVector {
		// Any time: the interrupt function reads it atomically.
		q.vector.Store(t.vector(v))
		return
	}
	// The rest of a queue's configuration is fixed once it is enabled
	// or the device runs (no VIRTIO_F_RING_RESET).
	if q.enabled || t.status&StatusDriverOK != 0 {
		return
	}
	switch off {
	case ccQueueSize:
		q.size = uint16(v) // checked when the queue is enabled
	case ccQueueEnable:
		if v != 1 {
			return // 0 is not the driver's to write without RING_RESET
		}
		max := t.maxSizes[t.queueSel]
		if q.size == 0 || q.size > max || q.size&(q.size-1) != 0 {
			t.setNeedsReset(t.epoch.Load(), fmt.Errorf(
				"virtio: queue %d enabled with size %d (a power of two up to %d)", t.queueSel, q.size, max))
			return
		}
		q.enabled = true
	case ccQueueDescLo, ccQueueDescHi:
		setHalf(&q.desc, off == ccQueueDescHi, v)
	case ccQueueDriverLo, ccQueueDriverHi:
		setHalf(&q.driver, off == ccQueueDriverHi, v)
	case ccQueueDeviceLo, ccQueueDeviceHi:
		setHalf(&q.device, off == ccQueueDeviceHi, v)
	}
}

// writeStatusLocked is the device status machine (virtio 1.2 §3.1.1).
// Bits are only ever added (clearing one is a reset's job): a driver that
// writes fewer bits changes nothing.
func (t *PCITransport) writeStatusLocked(v uint8) {
	if v == 0 {
		t.resetLocked()
		return
	}
	v &^= StatusNeedsReset // the device's bit, not the driver's
	old := t.status
	nw := old | v
	if nw&StatusFeaturesOK != 0 && old&StatusFeaturesOK == 0 {
		// Kept only for a subset of the offer that includes VERSION_1;
		// the driver reads status back to see (virtio 1.2 §3.1.1 step 6).
		if t.drvFeat&^t.offered != 0 || t.drvFeat&FeatureVersion1 == 0 {
			nw &^= StatusFeaturesOK
		}
	}
	if nw&StatusDriverOK != 0 && old&StatusDriverOK == 0 {
		switch {
		case nw&StatusFeaturesOK == 0:
			t.status = nw
			t.setNeedsReset(t.epoch.Load(), fmt.Errorf("%w: DRIVER_OK without FEATURES_OK", errFeatures))
			return
		case t.needsReset.Load():
			// A broken configuration: nothing to run until reset.
		default:
			t.status = nw
			t.activateLocked()
			return
		}
	}
	t.status = nw
}
