package virtio

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/govmm/govmm/exitcause"
)

// Interrupter sends MSI-X messages (the pci package's *MSIX).
//
// Signal is called from device goroutines (queue interrupts, NEEDS_RESET,
// config changes) and from vCPU threads inside WriteBAR, under the
// transport's lock (a driver error found in a register write sets
// NEEDS_RESET and signals msix_config there). It must therefore not wait
// for a lock its caller of WriteBAR may hold, nor call back into the
// transport: the transport's reset holds its lock while Device.Reset
// waits for device goroutines that may be inside Signal.
type Interrupter interface {
	// Signal sends vector's message (masking and pending are its business).
	Signal(vector uint16)
	// Vectors is the MSI-X table size.
	Vectors() int
}

// NoVector is VIRTIO_MSI_NO_VECTOR: no interrupt for this source.
const NoVector = 0xFFFF

// Device status bits (virtio 1.2 §2.1).
const (
	StatusAcknowledge = 1
	StatusDriver      = 2
	StatusDriverOK    = 4
	StatusFeaturesOK  = 8
	StatusNeedsReset  = 0x40
	StatusFailed      = 0x80
)

// The one memory BAR: each virtio structure in a page of its own, so the
// lead may map, trap or ioeventfd each one separately.
const (
	barCommon     = 0x0000
	barCommonLen  = 0x3C // struct virtio_pci_common_cfg up to queue_reset (1.2)
	barISR        = 0x1000
	barISRLen     = 1
	barDevice     = 0x2000
	barDeviceLen  = 0x1000
	barNotify     = 0x3000
	barNotifyLen  = 0x1000
	notifyMult    = 4 // notify_off_multiplier: queue q notifies at barNotify + 4*q
	barTotal      = 0x4000
	maxQueues     = barNotifyLen / notifyMult
	isrQueue      = 1 // ISR bit 0: a queue interrupt
	isrConfig     = 2 // ISR bit 1: a configuration change
	transportBits = FeatureVersion1 | FeatureIndirectDesc | FeatureEventIdx
	deviceBits    = 1<<24 - 1
)

// TransportStats are a transport's counters (atomic: read any time).
type TransportStats struct {
	NotifyExits      atomic.Uint64 // notify writes that reached WriteBAR (no ioeventfd caught them)
	ConfigInterrupts atomic.Uint64 // configuration-change interrupts (NEEDS_RESET, ConfigChanged)
	ConfigNoVector   atomic.Uint64 // of which msix_config was NO_VECTOR
	Resets           atomic.Uint64 // device_status writes of 0
	NeedsResets      atomic.Uint64 // times DEVICE_NEEDS_RESET was set
	lastError        atomic.Pointer[string]
	// Queues holds each queue's counters; they survive resets.
	Queues []QueueStats
}

// LastError is the text of the last error that set DEVICE_NEEDS_RESET.
func (s *TransportStats) LastError() string {
	if p := s.lastError.Load(); p != nil {
		return *p
	}
	return ""
}

// PCITransport is the modern virtio-pci transport (virtio 1.2 §4.1) of one
// device, independent of the PCI function that carries it: the lead puts
// BARSize/ReadBAR/WriteBAR behind a memory BAR, Capabilities in the
// capability list, PCICfgHook on the PCI_CFG capability, and NotifyFD(q)
// in KVM_IOEVENTFD at the BAR's address + NotifyOffset(q).
type PCITransport struct {
	dev      Device
	mem      Memory
	msix     Interrupter
	offered  uint64   // device bits | transportBits
	maxSizes []uint16 // Device.QueueSizes
	stats    *TransportStats
	kick     []*kicker // one per queue: its eventfd lives as long as the transport

	// Written by device goroutines (interrupts, NeedsReset,
	// ConfigChanged) as well as vCPUs, so atomic, not under mu: a device
	// goroutine must never wait for mu, which reset holds while
	// Device.Reset waits for that goroutine.
	configVector atomic.Uint32
	needsReset   atomic.Bool
	isr          atomic.Uint32
	generation   atomic.Uint32
	// epoch numbers activations; callbacks of an older one are ignored
	// (a device's goroutine that outlives its reset cannot disturb the next).
	epoch atomic.Uint64
	// capBAR is the BAR number Capabilities was given (the PCI_CFG
	// window's check); set at build time, read by config-space accesses.
	capBAR atomic.Uint32

	// mu guards the common configuration below and serializes Device
	// calls (the Device contract). Notify writes take it shared, only
	// to keep Close from freeing an eventfd under them.
	mu         sync.RWMutex
	status     uint8
	devFeatSel uint32
	drvFeatSel uint32
	drvFeat    uint64
	queueSel   uint16
	queues     []*queueState
	active     bool // queues built and kickers running (DRIVER_OK)
	closed     bool
	// act is the activation handed to the device, and rings its queues
	// (nil entries for disabled ones): kept for Suspend, Resume and Save.
	act   Activation
	rings []*Queue
	// suspended: Suspend stopped the device's goroutines (a snapshot);
	// Resume starts them again on the same queues.
	suspended bool
}

// queueState is one queue's common-configuration registers.
type queueState struct {
	size                 uint16 // guarded by mu
	enabled              bool   // guarded by mu
	desc, driver, device uint64 // guarded by mu
	// vector is read by the queue's interrupt function on the device's
	// goroutine, written by the driver any time.
	vector atomic.Uint32
}

// NewPCITransport builds the transport of dev over guest memory mem,
// signalling through msix. Close releases its eventfds.
func NewPCITransport(dev Device, mem Memory, msix Interrupter) (*PCITransport, error) {
	sizes := append([]uint16(nil), dev.QueueSizes()...)
	if len(sizes) > maxQueues {
		return nil, fmt.Errorf("virtio: %d queues, the notify region holds %d", len(sizes), maxQueues)
	}
	for i, n := range sizes {
		if n == 0 || n > MaxQueueSize || n&(n-1) != 0 {
			return nil, fmt.Errorf("virtio: queue %d maximum size %d is not a power of two in [1, %d]", i, n, MaxQueueSize)
		}
	}
	t := &PCITransport{
		dev: dev, mem: mem, msix: msix,
		offered:  dev.Features()&deviceBits | transportBits,
		maxSizes: sizes,
		stats:    &TransportStats{Queues: make([]QueueStats, len(sizes))},
	}
	for range sizes {
		k, err := newKicker()
		if err != nil {
			t.Close()
			return nil, err
		}
		t.kick = append(t.kick, k)
		t.queues = append(t.queues, new(queueState))
	}
	t.clearLocked()
	return t, nil
}

// Stats are the transport's counters.
func (t *PCITransport) Stats() *TransportStats { return t.stats }

// BARSize is the size of the memory BAR (a power of two).
func (t *PCITransport) BARSize() uint64 { return barTotal }

// NotifyOffset is queue q's notification address within the BAR.
func (t *PCITransport) NotifyOffset(q int) uint64 { return barNotify + notifyMult*uint64(q) }

// NotifyFD is queue q's notification eventfd, for KVM_IOEVENTFD at
// NotifyOffset(q) (no datamatch; Linux writes 16 bits, length 0 matches
// any width). It stays valid until Close.
func (t *PCITransport) NotifyFD(q int) int { return t.kick[q].fd }

// NumQueues is the number of queues.
func (t *PCITransport) NumQueues() int { return len(t.maxSizes) }

// Cause is the accounting cause of a BAR access at off.
func (t *PCITransport) Cause(off uint64, write bool) exitcause.Cause {
	if write && off >= barNotify && off < barNotify+barNotifyLen {
		return exitcause.VirtioNotify
	}
	return exitcause.VirtioConfig
}

// ReadBAR serves a read of the BAR at off. An access must lie in one
// structure and have the width of a common-configuration field (else it
// reads 0); device configuration takes any width.
func (t *PCITransport) ReadBAR(off uint64, data []byte) {
	clear(data)
	n := uint64(len(data))
	if n == 0 || n > 8 || off >= barTotal || n > barTotal-off {
		return
	}
	switch {
	case off < barCommon+barCommonLen:
		if off+n <= barCommon+barCommonLen {
			t.mu.Lock()
			v, ok := t.readCommonLocked(off-barCommon, int(n))
			t.mu.Unlock()
			if ok {
				putLE(data, v)
			}
		}
	case off == barISR && n == 1:
		// Reading clears it (virtio 1.2 §4.1.4.5.1).
		data[0] = byte(t.isr.Swap(0))
	case off >= barDevice && off+n <= barDevice+barDeviceLen:
		t.mu.Lock()
		if !t.closed {
			t.dev.ReadConfig(off-barDevice, data)
		}
		t.mu.Unlock()
	}
}

// WriteBAR serves a write of the BAR at off; writes that ReadBAR would
// read as 0 are ignored.
func (t *PCITransport) WriteBAR(off uint64, data []byte) {
	n := uint64(len(data))
	if n == 0 || n > 8 || off >= barTotal || n > barTotal-off {
		return
	}
	switch {
	case off >= barNotify && off < barNotify+barNotifyLen:
		// The same eventfd an ioeventfd would have written: one path.
		rel := off - barNotify
		if q := rel / notifyMult; rel%notifyMult == 0 && q < uint64(len(t.kick)) {
			t.stats.NotifyExits.Add(1)
			t.mu.RLock()
			if !t.closed {
				t.kick[q].notify()
			}
			t.mu.RUnlock()
		}
	case off < barCommon+barCommonLen:
		if off+n <= barCommon+barCommonLen {
			t.mu.Lock()
			if !t.closed {
				t.writeCommonLocked(off-barCommon, int(n), getLE(data))
			}
			t.mu.Unlock()
		}
	case off >= barDevice && off+n <= barDevice+barDeviceLen:
		t.mu.Lock()
		if !t.closed {
			t.dev.WriteConfig(off-barDevice, data)
		}
		t.mu.Unlock()
	}
}

func putLE(b []byte, v uint64) {
	for i := range b {
		b[i] = byte(v >> (8 * i))
	}
}

func getLE(b []byte) uint64 {
	var v uint64
	for i := range b {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}

// Close tears down the queues as a reset does (Device.Reset included) and
// releases the eventfds. The transport serves nothing afterwards.
func (t *PCITransport) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if len(t.kick) == len(t.maxSizes) { // not NewPCITransport's failure
		t.teardownLocked()
	}
	t.closed = true
	var errs []error
	for _, k := range t.kick {
		errs = append(errs, k.close())
	}
	return errors.Join(errs...)
}

// resetLocked is the driver's device_status write of 0.
func (t *PCITransport) resetLocked() {
	t.stats.Resets.Add(1)
	t.teardownLocked()
	t.clearLocked()
}

// teardownLocked stops an activation. Order: the old activation's
// callbacks are disowned first, then kickers stop and Kicks channels
// close, then the device stops (its goroutines may Push until
// Device.Reset returns: what they complete stays in the used ring).
func (t *PCITransport) teardownLocked() {
	t.epoch.Add(1)
	for _, k := range t.kick {
		k.stop()
	}
	t.dev.Reset()
	t.active, t.suspended, t.act, t.rings = false, false, Activation{}, nil
}

// clearLocked returns every register to its initial value; the reset
// path does it last, so status reads 0 only once the device has stopped.
func (t *PCITransport) clearLocked() {
	t.status = 0
	t.devFeatSel, t.drvFeatSel, t.drvFeat, t.queueSel = 0, 0, 0, 0
	for i, q := range t.queues {
		q.size = t.maxSizes[i]
		q.enabled = false
		q.desc, q.driver, q.device = 0, 0, 0
		q.vector.Store(NoVector)
	}
	t.configVector.Store(NoVector)
	t.needsReset.Store(false)
	t.isr.Store(0)
	t.generation.Store(0)
}

// setNeedsReset is Activation.NeedsReset and the transport's own driver
// errors: DEVICE_NEEDS_RESET, and a configuration interrupt the first time.
func (t *PCITransport) setNeedsReset(epoch uint64, err error) {
	if t.epoch.Load() != epoch {
		return
	}
	msg := "virtio: device needs reset"
	if err != nil {
		msg = err.Error()
	}
	t.stats.lastError.Store(&msg)
	if t.needsReset.Swap(true) {
		return
	}
	t.stats.NeedsResets.Add(1)
	t.configInterrupt()
}

// configChanged is Activation.ConfigChanged.
func (t *PCITransport) configChanged(epoch uint64) {
	if t.epoch.Load() != epoch {
		return
	}
	t.generation.Add(1)
	t.configInterrupt()
}

func (t *PCITransport) configInterrupt() {
	t.isr.Or(isrConfig)
	t.stats.ConfigInterrupts.Add(1)
	v := t.configVector.Load()
	if v == NoVector {
		t.stats.ConfigNoVector.Add(1)
		return
	}
	t.msix.Signal(uint16(v))
}

// queueInterrupt is queue i's interrupt function for activation epoch.
func (t *PCITransport) queueInterrupt(i int, epoch uint64) func() {
	qs, st := t.queues[i], &t.stats.Queues[i]
	return func() {
		if t.epoch.Load() != epoch {
			return
		}
		t.isr.Or(isrQueue)
		v := qs.vector.Load()
		if v == NoVector {
			st.NoVector.Add(1)
			return
		}
		t.msix.Signal(uint16(v))
	}
}

// activateLocked is DRIVER_OK: build the enabled queues, start their
// kickers, hand them to the device.
func (t *PCITransport) activateLocked() { t.startLocked(nil, false) }

// startLocked builds the enabled queues, where rings (a snapshot's) says
// when set, starts their kickers and hands them to the device, or with
// suspended, keeps them for Resume to.
func (t *PCITransport) startLocked(rings []*QueueRing, suspended bool) {
	epoch := t.epoch.Load()
	feats := t.drvFeat
	qs := make([]QueueIO, len(t.queues))
	chans := make([]chan struct{}, len(t.queues))
	for i, s := range t.queues {
		if !s.enabled {
			continue
		}
		chans[i] = make(chan struct{}, 1)
		var ring *QueueRing
		if i < len(rings) {
			ring = rings[i]
		}
		q, err := NewQueue(QueueConfig{
			Size: s.size, Desc: s.desc, Driver: s.driver, Device: s.device,
			EventIdx: feats&FeatureEventIdx != 0, Indirect: feats&FeatureIndirectDesc != 0,
			Stats: &t.stats.Queues[i], Ring: ring,
		}, t.mem, t.queueInterrupt(i, epoch), chans[i])
		if err != nil {
			t.setNeedsReset(epoch, fmt.Errorf("virtio: DRIVER_OK: queue %d: %w", i, err))
			return
		}
		qs[i] = q
	}
	for i, ch := range chans {
		if ch == nil {
			continue
		}
		if err := t.kick[i].start(ch, &t.stats.Queues[i]); err != nil {
			for _, k := range t.kick {
				k.stop()
			}
			t.setNeedsReset(epoch, fmt.Errorf("virtio: DRIVER_OK: queue %d: %w", i, err))
			return
		}
	}
	t.active = true
	t.rings = make([]*Queue, len(qs))
	for i, q := range qs {
		if q != nil {
			t.rings[i] = q.(*Queue)
		}
	}
	t.act = Activation{
		Features:      feats,
		Queues:        qs,
		NeedsReset:    func(err error) { t.setNeedsReset(epoch, err) },
		ConfigChanged: func() { t.configChanged(epoch) },
	}
	if suspended {
		t.suspended = true
		return
	}
	err := t.dev.Activate(t.act)
	if err != nil {
		t.setNeedsReset(epoch, fmt.Errorf("virtio: activate: %w", err))
	}
}
