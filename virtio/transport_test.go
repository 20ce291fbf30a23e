package virtio

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/govmm/govmm/exitcause"
)

// fakeDevice serves every queue with one goroutine: on each kick it pops
// every chain, fills its writable bytes with 0x5A, pushes, interrupts.
// A bad chain: NeedsReset, and the goroutine stops.
type fakeDevice struct {
	sizes []uint16

	mu          sync.Mutex
	config      [8]byte
	act         Activation
	activations int
	resets      int
	wg          sync.WaitGroup
	stop        chan struct{}
	served      atomic.Int64
	failActive  bool
}

func (d *fakeDevice) Type() DeviceType     { return TypeBlock }
func (d *fakeDevice) Features() uint64     { return 1<<0 | 1<<5 | 1<<40 } // bit 40 is not a device bit: masked
func (d *fakeDevice) QueueSizes() []uint16 { return d.sizes }
func (d *fakeDevice) ReadConfig(off uint64, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range data {
		if o := off + uint64(i); o < uint64(len(d.config)) {
			data[i] = d.config[o]
		}
	}
}
func (d *fakeDevice) WriteConfig(off uint64, data []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range data {
		if o := off + uint64(i); o < uint64(len(d.config)) {
			d.config[o] = data[i]
		}
	}
}

func (d *fakeDevice) Activate(a Activation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failActive {
		return errors.New("fake activation failure")
	}
	d.act = a
	d.activations++
	d.stop = make(chan struct{})
	for _, q := range a.Queues {
		if q == nil {
			continue
		}
		d.wg.Add(1)
		go d.serve(q, a, d.stop)
	}
	return nil
}

func (d *fakeDevice) serve(q QueueIO, a Activation, stop chan struct{}) {
	defer d.wg.Done()
	for {
		select {
		case _, ok := <-q.Kicks():
			if !ok {
				return
			}
		case <-stop:
			return
		}
		for {
			q.DisableKicks()
			for {
				c, err := q.Pop()
				if err != nil {
					a.NeedsReset(err)
					return
				}
				if c == nil {
					break
				}
				n := 0
				for _, b := range c.Writable {
					for i := range b {
						b[i] = 0x5A
					}
					n += len(b)
				}
				if err := q.Push(c, uint32(n)); err != nil {
					a.NeedsReset(err)
					return
				}
				d.served.Add(1)
			}
			q.Interrupt()
			if !q.EnableKicks() {
				break
			}
		}
	}
}

func (d *fakeDevice) Reset() {
	d.mu.Lock()
	stop := d.stop
	d.stop = nil
	d.resets++
	d.config = [8]byte{}
	d.mu.Unlock()
	if stop != nil {
		close(stop)
	}
	d.wg.Wait()
}

// fakeMSIX records signals per vector.
type fakeMSIX struct {
	n       int
	signals [8]atomic.Int64
	ch      chan uint16
}

func newFakeMSIX(n int) *fakeMSIX { return &fakeMSIX{n: n, ch: make(chan uint16, 1024)} }
func (m *fakeMSIX) Vectors() int  { return m.n }
func (m *fakeMSIX) Signal(v uint16) {
	m.signals[v].Add(1)
	select {
	case m.ch <- v:
	default:
	}
}

// wait waits for a signal of vector v.
func (m *fakeMSIX) wait(t *testing.T, v uint16) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-m.ch:
			if got == v {
				return
			}
		case <-deadline:
			t.Fatalf("no interrupt on vector %d", v)
		}
	}
}

// bar is the driver's view of the BAR.
type bar struct {
	t  testing.TB
	tr *PCITransport
}

func (b bar) r(off uint64, n int) uint64 {
	d := make([]byte, n)
	b.tr.ReadBAR(off, d)
	return getLE(d)
}
func (b bar) w(off uint64, n int, v uint64) {
	d := make([]byte, n)
	putLE(d, v)
	b.tr.WriteBAR(off, d)
}
func (b bar) status() uint8     { return uint8(b.r(ccDeviceStatus, 1)) }
func (b bar) setStatus(s uint8) { b.w(ccDeviceStatus, 1, uint64(s)) }

type rig struct {
	t    *testing.T
	dev  *fakeDevice
	msix *fakeMSIX
	tr   *PCITransport
	bar  bar
	mem  fakeMem
	drv  []*testDriver
}

func newRig(t *testing.T) *rig {
	dev := &fakeDevice{sizes: []uint16{256, 16}}
	msix := newFakeMSIX(4)
	mem := make(fakeMem, 1<<20)
	tr, err := NewPCITransport(dev, mem, msix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return &rig{t: t, dev: dev, msix: msix, tr: tr, bar: bar{t, tr}, mem: mem}
}

// probe is Linux's virtio_pci_modern probe and virtio_dev_probe, with
// queue q's size lowered to sizes[q] and its vector q+1.
func (r *rig) probe(want uint64, sizes []uint16) {
	t, b := r.t, r.bar
	t.Helper()
	b.setStatus(0)
	if b.status() != 0 {
		t.Fatal("status not 0 after reset")
	}
	b.setStatus(StatusAcknowledge)
	b.setStatus(StatusAcknowledge | StatusDriver)
	b.w(ccDeviceFeatureSelect, 4, 0)
	lo := b.r(ccDeviceFeature, 4)
	b.w(ccDeviceFeatureSelect, 4, 1)
	hi := b.r(ccDeviceFeature, 4)
	offered := hi<<32 | lo
	if offered != 1<<0|1<<5|FeatureVersion1|FeatureIndirectDesc|FeatureEventIdx {
		t.Fatalf("offered %#x", offered)
	}
	f := offered & want
	b.w(ccDriverFeatureSelect, 4, 0)
	b.w(ccDriverFeature, 4, f&0xFFFFFFFF)
	b.w(ccDriverFeatureSelect, 4, 1)
	b.w(ccDriverFeature, 4, f>>32)
	b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK)
	if b.status()&StatusFeaturesOK == 0 {
		t.Fatal("FEATURES_OK not kept")
	}
	b.w(ccMSIXConfig, 2, 0)
	if b.r(ccMSIXConfig, 2) != 0 {
		t.Fatal("msix_config vector not kept")
	}
	if n := b.r(ccNumQueues, 2); n != 2 {
		t.Fatalf("num_queues %d", n)
	}
	r.drv = nil
	for q, size := range sizes {
		b.w(ccQueueSelect, 2, uint64(q))
		if max := b.r(ccQueueSize, 2); max != uint64(r.dev.sizes[q]) {
			t.Fatalf("queue %d size %d", q, max)
		}
		b.w(ccQueueSize, 2, uint64(size))
		d := newTestDriver(r.mem, size, 0x10000*uint64(q+1))
		r.drv = append(r.drv, d)
		b.w(ccQueueDescLo, 4, d.desc)
		b.w(ccQueueDescHi, 4, d.desc>>32)
		b.w(ccQueueDriverLo, 4, d.avail)
		b.w(ccQueueDriverHi, 4, 0)
		b.w(ccQueueDeviceLo, 4, d.used)
		b.w(ccQueueDeviceHi, 4, 0)
		b.w(ccQueueMSIXVector, 2, uint64(q+1))
		if v := b.r(ccQueueMSIXVector, 2); v != uint64(q+1) {
			t.Fatalf("queue %d vector %#x", q, v)
		}
		if off := b.r(ccQueueNotifyOff, 2); off != uint64(q) {
			t.Fatalf("queue %d notify_off %d", q, off)
		}
		b.w(ccQueueEnable, 2, 1)
		if b.r(ccQueueEnable, 2) != 1 {
			t.Fatalf("queue %d not enabled", q)
		}
	}
	b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK | StatusDriverOK)
	if s := b.status(); s != StatusAcknowledge|StatusDriver|StatusFeaturesOK|StatusDriverOK {
		t.Fatalf("status %#x after DRIVER_OK (%s)", s, r.tr.Stats().LastError())
	}
}

// offer posts a one-writable-buffer chain on queue q's ring.
func (r *rig) offer(q int) uint16 {
	d := r.drv[q]
	h := d.availIdx % d.size
	d.setDesc(d.desc, int(h), 0x80000+uint64(h)*64, 64, descFWrite, 0)
	d.add(h)
	return h
}

func (r *rig) waitUsed(q int, idx uint16) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.drv[q].usedIdx() != idx {
		if time.Now().After(deadline) {
			r.t.Fatalf("queue %d used idx %d, want %d", q, r.drv[q].usedIdx(), idx)
		}
		time.Sleep(time.Millisecond)
	}
}

const allFeatures = ^uint64(0)

func TestTransportTraffic(t *testing.T) {
	r := newRig(t)
	r.probe(allFeatures, []uint16{64, 16})
	if r.dev.activations != 1 || r.dev.act.Features&FeatureEventIdx == 0 {
		t.Fatalf("activations %d features %#x", r.dev.activations, r.dev.act.Features)
	}
	// Notify through an exit.
	h := r.offer(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.msix.wait(t, 1)
	r.waitUsed(0, 1)
	if id, n := r.drv[0].usedElem(0); id != uint32(h) || n != 64 || r.mem[0x80000+uint64(h)*64] != 0x5A {
		t.Fatalf("used elem %d, %d", id, n)
	}
	// Notify through the eventfd, as KVM's ioeventfd does.
	r.offer(1)
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(r.tr.NotifyFD(1), one[:]); err != nil {
		t.Fatal(err)
	}
	r.msix.wait(t, 2)
	r.waitUsed(1, 1)
	st := r.tr.Stats()
	if st.NotifyExits.Load() != 1 || st.Queues[0].Kicks.Load() != 1 || st.Queues[1].Kicks.Load() != 1 {
		t.Fatalf("exits %d kicks %d %d", st.NotifyExits.Load(), st.Queues[0].Kicks.Load(), st.Queues[1].Kicks.Load())
	}
	if st.Queues[0].Interrupts.Load() != 1 || r.msix.signals[1].Load() != 1 {
		t.Fatal("queue 0 interrupt count")
	}
	// ISR was set too (INTx's view), read clears.
	if isr := r.bar.r(barISR, 1); isr&isrQueue == 0 {
		t.Fatalf("isr %#x", isr)
	}
	if r.bar.r(barISR, 1) != 0 {
		t.Fatal("ISR not cleared by read")
	}
}

// TestTransportEventIdx: with used_event behind, a completion is pushed
// but not signalled.
func TestTransportEventIdx(t *testing.T) {
	r := newRig(t)
	r.probe(allFeatures, []uint16{64, 16})
	r.offer(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.msix.wait(t, 1) // the first is always sent
	r.drv[0].setUsedEvent(100)
	r.offer(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.waitUsed(0, 2)
	deadline := time.Now().Add(5 * time.Second)
	for r.tr.Stats().Queues[0].Suppressed.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("interrupt not suppressed")
		}
		time.Sleep(time.Millisecond)
	}
	if r.msix.signals[1].Load() != 1 {
		t.Fatal("suppressed interrupt sent")
	}
	// The device asked to be kicked at the next buffer.
	if ev := r.drv[0].availEvent(); ev != 2 {
		t.Fatalf("avail_event %d", ev)
	}
}

func TestTransportNoEventIdx(t *testing.T) {
	r := newRig(t)
	r.probe(allFeatures&^(FeatureEventIdx|FeatureIndirectDesc), []uint16{64, 16})
	r.drv[0].setAvailFlags(availFNoInterrupt)
	r.offer(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.waitUsed(0, 1)
	deadline := time.Now().Add(5 * time.Second)
	for r.tr.Stats().Queues[0].Suppressed.Load() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("NO_INTERRUPT not honoured")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTransportResetMidTraffic: a driver keeps the queues busy while
// another vCPU resets; afterwards status is 0, the device was reset, its
// goroutines are gone, and every completion it made is in the used ring.
func TestTransportResetMidTraffic(t *testing.T) {
	r := newRig(t)
	for round := 0; round < 20; round++ {
		r.probe(allFeatures, []uint16{64, 16})
		d := r.drv[0]
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if d.availIdx-d.usedIdx() < d.size {
					r.offer(0)
					r.bar.w(r.tr.NotifyOffset(0), 2, 0)
				} else {
					time.Sleep(10 * time.Microsecond)
				}
			}
		}()
		time.Sleep(2 * time.Millisecond)
		before := r.dev.served.Load()
		r.bar.setStatus(0)
		close(stop)
		<-done
		if r.bar.status() != 0 {
			t.Fatal("status not 0 after reset")
		}
		served := r.dev.served.Load()
		if served < before {
			t.Fatal("served went back")
		}
		// Everything served was published (idx wraps at 2^16; the test
		// stays far below).
		if got := uint64(d.usedIdx()); got > uint64(d.availIdx) {
			t.Fatalf("used idx %d past avail idx %d", got, d.availIdx)
		}
		r.dev.served.Store(0)
		if int(served) != int(d.usedIdx()) {
			t.Fatalf("device served %d, used idx %d", served, d.usedIdx())
		}
		if r.bar.r(ccMSIXConfig, 2) != NoVector {
			t.Fatal("config vector survived reset")
		}
		clear(r.mem)
	}
	if r.dev.resets < 20 || r.tr.Stats().Resets.Load() < 20 {
		t.Fatalf("resets %d/%d", r.dev.resets, r.tr.Stats().Resets.Load())
	}
}

func TestTransportBadChain(t *testing.T) {
	r := newRig(t)
	r.probe(allFeatures, []uint16{64, 16})
	d := r.drv[0]
	d.setDesc(d.desc, 0, 0x80000, 1, descFNext, 1)
	d.setDesc(d.desc, 1, 0x80000, 1, descFNext, 0)
	d.add(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.msix.wait(t, 0)
	if r.bar.status()&StatusNeedsReset == 0 {
		t.Fatal("NEEDS_RESET not set")
	}
	if e := r.tr.Stats().LastError(); !strings.Contains(e, "loop") {
		t.Fatalf("last error %q", e)
	}
	if r.tr.Stats().NeedsResets.Load() != 1 || r.bar.r(barISR, 1)&isrConfig == 0 {
		t.Fatal("needs-reset count or ISR")
	}
	// The driver resets and starts again cleanly.
	r.probe(allFeatures, []uint16{64, 16})
	r.offer(0)
	r.bar.w(r.tr.NotifyOffset(0), 2, 0)
	r.waitUsed(0, 1)
}

func TestTransportBadQueueSize(t *testing.T) {
	r := newRig(t)
	b := r.bar
	b.setStatus(0)
	b.setStatus(StatusAcknowledge | StatusDriver)
	b.w(ccQueueSelect, 2, 0)
	b.w(ccQueueSize, 2, 100)
	b.w(ccQueueEnable, 2, 1)
	if b.r(ccQueueEnable, 2) != 0 || b.status()&StatusNeedsReset == 0 {
		t.Fatal("size 100 enabled")
	}
	// Bad rings (outside RAM) show at DRIVER_OK.
	b.setStatus(0)
	if b.status() != 0 {
		t.Fatal("reset")
	}
	b.setStatus(StatusAcknowledge | StatusDriver)
	b.w(ccDriverFeatureSelect, 4, 1)
	b.w(ccDriverFeature, 4, 1) // VERSION_1
	b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK)
	b.w(ccQueueSelect, 2, 0)
	b.w(ccQueueDescHi, 4, 1) // 4 GiB: not RAM
	b.w(ccQueueEnable, 2, 1)
	b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK | StatusDriverOK)
	if b.status()&StatusNeedsReset == 0 || r.dev.activations != 0 {
		t.Fatal("queue outside RAM activated")
	}
}

func TestTransportFeatures(t *testing.T) {
	r := newRig(t)
	b := r.bar
	try := func(lo, hi uint64) bool {
		b.setStatus(0)
		b.setStatus(StatusAcknowledge | StatusDriver)
		b.w(ccDriverFeatureSelect, 4, 0)
		b.w(ccDriverFeature, 4, lo)
		b.w(ccDriverFeatureSelect, 4, 1)
		b.w(ccDriverFeature, 4, hi)
		b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK)
		return b.status()&StatusFeaturesOK != 0
	}
	if !try(1, 1) {
		t.Error("subset with VERSION_1 refused")
	}
	if try(1, 0) {
		t.Error("FEATURES_OK without VERSION_1")
	}
	if try(1<<1, 1) {
		t.Error("FEATURES_OK with a bit not offered")
	}
	if try(0, 1|1<<8) { // bit 40: the device named it, the transport masks it
		t.Error("FEATURES_OK with a masked bit")
	}
	// DRIVER_OK without FEATURES_OK: needs reset, no activation.
	b.setStatus(StatusAcknowledge | StatusDriver | StatusDriverOK)
	if b.status()&StatusNeedsReset == 0 || r.dev.activations != 0 {
		t.Error("DRIVER_OK without FEATURES_OK")
	}
	// Activate failure: needs reset.
	r.dev.failActive = true
	try(0, 1)
	b.setStatus(StatusAcknowledge | StatusDriver | StatusFeaturesOK | StatusDriverOK)
	if b.status()&StatusNeedsReset == 0 || !strings.Contains(r.tr.Stats().LastError(), "fake") {
		t.Error("Activate error not NEEDS_RESET")
	}
}

func TestTransportRegisters(t *testing.T) {
	r := newRig(t)
	b := r.bar
	b.setStatus(StatusAcknowledge)
	// Wrong widths read 0 and are ignored.
	if v := b.r(ccDeviceStatus, 4); v != 0 {
		t.Errorf("4-byte status read %#x", v)
	}
	b.w(ccQueueSelect, 1, 1)
	if b.r(ccQueueSelect, 2) != 0 {
		t.Error("1-byte queue_select write applied")
	}
	b.w(ccQueueSelect, 2, 1)
	if b.r(ccQueueSelect, 2) != 1 || b.r(ccQueueSize, 2) != 16 {
		t.Error("queue_select")
	}
	b.w(ccQueueDescLo, 8, 0x1234_5678_9ABC_DEF0)
	if b.r(ccQueueDescLo, 4) != 0 || b.r(ccQueueDescLo, 8) != 0 {
		t.Error("8-byte queue_desc access")
	}
	b.w(ccQueueDescLo+1, 2, 0xFFFF)
	if b.r(ccQueueDescLo, 4) != 0 {
		t.Error("misaligned write applied")
	}
	b.w(ccQueueDriverHi, 4, 0xAB)
	if b.r(ccQueueDriverHi, 4) != 0xAB || b.r(ccQueueDriverLo, 4) != 0 {
		t.Error("queue_driver halves")
	}
	// Vectors past the table read NO_VECTOR.
	b.w(ccQueueMSIXVector, 2, 4)
	b.w(ccMSIXConfig, 2, 9)
	if b.r(ccQueueMSIXVector, 2) != NoVector || b.r(ccMSIXConfig, 2) != NoVector {
		t.Error("out-of-range vector accepted")
	}
	// A queue that does not exist: all zeros, writes ignored.
	b.w(ccQueueSelect, 2, 7)
	b.w(ccQueueSize, 2, 8)
	if b.r(ccQueueSize, 2) != 0 || b.r(ccQueueNotifyOff, 2) != 0 {
		t.Error("queue 7")
	}
	// Device configuration: any width, through the device.
	b.w(barDevice+2, 4, 0xDDCCBBAA)
	if b.r(barDevice, 8) != 0xDDCCBBAA0000 || b.r(barDevice+0xFFF, 1) != 0 {
		t.Errorf("device config %#x", b.r(barDevice, 8))
	}
	if b.r(barDevice+0xFFE, 4) != 0 { // straddles the structure's end
		t.Error("straddling read")
	}
	// Feature select past 1 reads 0.
	b.w(ccDeviceFeatureSelect, 4, 2)
	if b.r(ccDeviceFeature, 4) != 0 {
		t.Error("feature word 2")
	}
	if r.tr.Cause(r.tr.NotifyOffset(1), true) != exitcause.VirtioNotify ||
		r.tr.Cause(ccDeviceStatus, true) != exitcause.VirtioConfig ||
		r.tr.Cause(r.tr.NotifyOffset(1), false) != exitcause.VirtioConfig {
		t.Error("Cause")
	}
	if r.tr.BARSize()&(r.tr.BARSize()-1) != 0 {
		t.Error("BAR size not a power of two")
	}
}

func TestTransportCapabilities(t *testing.T) {
	r := newRig(t)
	caps := r.tr.Capabilities(2)
	if len(caps) != 5 {
		t.Fatal(len(caps))
	}
	wantType := []byte{CapCommonCfg, CapNotifyCfg, CapISRCfg, CapDeviceCfg, CapPCICfg}
	for i, c := range caps {
		if int(c[0]) != len(c)+2 || c[1] != wantType[i] || c[2] != 2 {
			t.Errorf("cap %d: % x", i, c)
		}
	}
	n := caps[1]
	if binary.LittleEndian.Uint32(n[6:]) != barNotify || binary.LittleEndian.Uint32(n[10:]) != 8 ||
		binary.LittleEndian.Uint32(n[14:]) != notifyMult {
		t.Errorf("notify cap % x", n)
	}
	if binary.LittleEndian.Uint32(caps[0][10:]) < 0x38 {
		t.Error("common cfg shorter than Linux's minimum")
	}

	// The PCI_CFG window: a stored copy of the capability as the pci
	// package would keep it, the hook over it.
	h := r.tr.PCICfgHook()
	stored := append([]byte{PCICapVendor, 0}, caps[4]...)
	write := func(off int, v uint64, n int) {
		d := make([]byte, n)
		putLE(d, v)
		h.WriteCap(off, d)
		copy(stored[off:], d)
	}
	read := func(off, n int) uint64 {
		d := append([]byte(nil), stored[off:off+n]...)
		h.ReadCap(off, d)
		return getLE(d)
	}
	write(capBAR, 2, 1)
	write(capOffset, ccNumQueues, 4)
	write(capLength, 2, 4)
	if v := read(capExtra, 4); v&0xFFFF != 2 {
		t.Errorf("num_queues through PCI_CFG: %#x", v)
	}
	write(capOffset, ccDeviceStatus, 4)
	write(capLength, 1, 4)
	write(capExtra, StatusAcknowledge, 1)
	if r.bar.status() != StatusAcknowledge {
		t.Error("status write through PCI_CFG")
	}
	if read(0, 4) != uint64(PCICapVendor)|uint64(len(stored))<<16|CapPCICfg<<24 {
		t.Errorf("header % x", stored[:4])
	}
	// Another BAR: nothing.
	write(capBAR, 3, 1)
	if read(capExtra, 1) != 0 {
		t.Error("window on another BAR")
	}
}

func TestTransportNewErrors(t *testing.T) {
	for _, sizes := range [][]uint16{{0}, {3}, {256, 100}, make([]uint16, maxQueues+1)} {
		if _, err := NewPCITransport(&fakeDevice{sizes: sizes}, make(fakeMem, 4096), newFakeMSIX(1)); err == nil {
			t.Errorf("sizes %v accepted", sizes[:min(len(sizes), 3)])
		}
	}
}

// fuzzOp encodes one FuzzTransport operation: kind (0 read, 1-2 write,
// 3 eventfd write, 4 PCI_CFG write, 5 PCI_CFG read), BAR (or capability)
// offset, width code (1<<w bytes) and a 32-bit value.
func fuzzOp(kind byte, off uint16, w byte, v uint32) []byte {
	return []byte{kind, byte(off), byte(off >> 8), w, byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
}

// fuzzProbe is a seed: a Linux-style probe of the fuzz device (queue 0
// with its rings at GPA 0, queue 1 at 0x1000), then notifies.
func fuzzProbe() []byte {
	var o []byte
	wr := func(off uint16, w byte, v uint32) { o = append(o, fuzzOp(1, off, w, v)...) }
	wr(ccDeviceStatus, 0, 0)
	wr(ccDeviceStatus, 0, StatusAcknowledge|StatusDriver)
	wr(ccDriverFeatureSelect, 2, 0)
	wr(ccDriverFeature, 2, 1)
	wr(ccDriverFeatureSelect, 2, 1)
	wr(ccDriverFeature, 2, uint32(FeatureVersion1>>32)|uint32(FeatureEventIdx>>32)) // bit 29 >> 32 is 0: VERSION_1 only
	wr(ccDeviceStatus, 0, StatusAcknowledge|StatusDriver|StatusFeaturesOK)
	wr(ccMSIXConfig, 1, 0)
	for q, base := range []uint32{0, 0x1000} {
		wr(ccQueueSelect, 1, uint32(q))
		wr(ccQueueDescLo, 2, base)
		wr(ccQueueDriverLo, 2, base+0x80)
		wr(ccQueueDeviceLo, 2, base+0x100)
		wr(ccQueueMSIXVector, 1, uint32(q+1))
		wr(ccQueueEnable, 1, 1)
	}
	wr(ccDeviceStatus, 0, StatusAcknowledge|StatusDriver|StatusFeaturesOK|StatusDriverOK)
	wr(barNotify, 1, 0)
	o = append(o, fuzzOp(3, 0, 0, 1)...)
	wr(barNotify+4, 1, 1)
	o = append(o, fuzzOp(0, barISR, 0, 0)...)
	o = append(o, fuzzOp(0, ccDeviceStatus, 0, 0)...)
	return o
}

// fuzzRAM is a seed: queue 0 (size 8) at GPA 0 with one writable 16-byte
// buffer at 0x800 available.
func fuzzRAM() []byte {
	ram := make([]byte, 0x108)
	binary.LittleEndian.PutUint64(ram[0:], 0x800)
	binary.LittleEndian.PutUint32(ram[8:], 16)
	binary.LittleEndian.PutUint16(ram[12:], descFWrite)
	binary.LittleEndian.PutUint16(ram[0x82:], 1) // avail idx 1, ring[0] = 0
	return ram
}

// runFuzzOps performs ops (fuzzOp's encoding) on tr and its PCI_CFG hook.
func runFuzzOps(tr *PCITransport, hook interface {
	ReadCap(off int, data []byte)
	WriteCap(off int, data []byte)
}, ops []byte) {
	for len(ops) >= 8 {
		kind, off, width := ops[0], uint64(binary.LittleEndian.Uint16(ops[1:])), 1<<(ops[3]%4)
		d := make([]byte, width)
		putLE(d, uint64(binary.LittleEndian.Uint32(ops[4:])))
		ops = ops[8:]
		switch kind % 6 {
		case 0:
			tr.ReadBAR(off%(barTotal+8), d)
		case 1, 2:
			tr.WriteBAR(off%(barTotal+8), d)
		case 3:
			var one [8]byte
			one[0] = 1
			unix.Write(tr.NotifyFD(int(d[0])%tr.NumQueues()), one[:])
		case 4:
			hook.WriteCap(int(off%24), d)
		case 5:
			hook.ReadCap(int(off%24), d)
		}
	}
}

// TestFuzzProbeSeed: the probe seed does reach DRIVER_OK and traffic
// (else the fuzzer would start from nothing but register noise).
func TestFuzzProbeSeed(t *testing.T) {
	dev := &fakeDevice{sizes: []uint16{8, 4}}
	mem := make(fakeMem, 1<<16)
	copy(mem, fuzzRAM())
	msix := newFakeMSIX(3)
	tr, err := NewPCITransport(dev, mem, msix)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Capabilities(2)
	ops := fuzzProbe()
	runFuzzOps(tr, tr.PCICfgHook(), ops[:len(ops)-16]) // not the final ISR and status reads
	msix.wait(t, 1)
	if dev.activations != 1 || load16(mem, 0x102) != 1 || mem[0x800] != 0x5A {
		t.Fatalf("activations %d, used idx %d (%s)", dev.activations, load16(mem, 0x102), tr.Stats().LastError())
	}
}

// FuzzTransport: random BAR, PCI_CFG and eventfd traffic from two vCPUs
// (with the fake device serving whatever queues get enabled over ram,
// copied at GPA 0) never panics or deadlocks. Only the seeds run under
// the race detector in `go test -race`. An input may point two queues'
// rings at the same bytes (even a seed may, as the two vCPUs' queue
// selects interleave), so two device goroutines touch the same guest
// bytes: a guest's race, not ours. Guest RAM is therefore mapped as
// govmm maps it (anonymous mmap, outside the Go heap), where the race
// detector does not look, as it does not in a VM; the transport's own
// state stays under it.
func FuzzTransport(f *testing.F) {
	f.Add(fuzzOp(1, ccDeviceStatus, 0, 1), []byte{})
	f.Add(append(fuzzOp(1, ccQueueSelect, 1, 2), fuzzOp(1, ccQueueEnable, 1, 1)...), []byte{})
	f.Add(fuzzProbe(), fuzzRAM())
	probeThenReset := append(fuzzProbe(), fuzzOp(1, ccDeviceStatus, 0, 0)...)
	f.Add(append(probeThenReset, fuzzProbe()...), fuzzRAM())
	// The PCI_CFG window: bar 2, offset of device_status, length 1, data.
	var cfg []byte
	cfg = append(cfg, fuzzOp(4, capBAR, 0, 2)...)
	cfg = append(cfg, fuzzOp(4, capOffset, 2, ccDeviceStatus)...)
	cfg = append(cfg, fuzzOp(4, capLength, 2, 1)...)
	cfg = append(cfg, fuzzOp(4, capExtra, 0, StatusAcknowledge)...)
	cfg = append(cfg, fuzzOp(5, capExtra, 2, 0)...)
	f.Add(cfg, []byte{})
	f.Fuzz(func(t *testing.T, ops, ram []byte) {
		if len(ops) > 2000 || len(ram) > 1<<12 {
			return
		}
		dev := &fakeDevice{sizes: []uint16{8, 4}}
		mem := mappedRAM(t, 1<<16)
		copy(mem, ram) // before the vCPUs start
		tr, err := NewPCITransport(dev, mem, newFakeMSIX(3))
		if err != nil {
			t.Fatal(err)
		}
		tr.Capabilities(2)
		hook := tr.PCICfgHook()
		var wg sync.WaitGroup
		run := func(ops []byte) {
			defer wg.Done()
			runFuzzOps(tr, hook, ops)
		}
		wg.Add(2)
		go run(ops)
		half := len(ops) / 2 &^ 7
		go run(ops[half:])
		done := make(chan struct{})
		go func() { wg.Wait(); tr.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			buf := make([]byte, 1<<20)
			t.Fatalf("deadlock:\n%s", buf[:runtime.Stack(buf, true)])
		}
	})
}

// TestTransportNeedsResetNoVector: with msix_config NO_VECTOR a bad chain
// still sets NEEDS_RESET and ISR's config bit, counted as unsignalled;
// a second error on the same activation is not a second interrupt.
func TestTransportNeedsResetNoVector(t *testing.T) {
	r := newRig(t)
	r.probe(allFeatures, []uint16{64, 16})
	r.bar.w(ccMSIXConfig, 2, NoVector)
	d := r.drv[1]
	d.setDesc(d.desc, 0, 0x80000, 16, descFWrite|descFNext, 1)
	d.setDesc(d.desc, 1, 0x80000, 16, 0, 0) // readable after writable
	d.add(0)
	r.bar.w(r.tr.NotifyOffset(1), 2, 1)
	st := r.tr.Stats()
	deadline := time.Now().Add(5 * time.Second)
	for r.bar.status()&StatusNeedsReset == 0 {
		if time.Now().After(deadline) {
			t.Fatal("NEEDS_RESET not set")
		}
		time.Sleep(time.Millisecond)
	}
	if st.ConfigNoVector.Load() != 1 || r.bar.r(barISR, 1) != isrConfig ||
		!strings.Contains(st.LastError(), "readable") || st.Queues[1].BadChains.Load() != 1 {
		t.Fatalf("no-vector %d, last error %q", st.ConfigNoVector.Load(), st.LastError())
	}
	r.tr.setNeedsReset(r.tr.epoch.Load(), errors.New("again"))
	if st.NeedsResets.Load() != 1 || st.ConfigInterrupts.Load() != 1 || st.LastError() != "again" {
		t.Fatalf("second error: needs-resets %d, config interrupts %d", st.NeedsResets.Load(), st.ConfigInterrupts.Load())
	}
	r.bar.setStatus(0)
	if r.bar.status() != 0 || st.LastError() != "again" {
		t.Fatal("reset")
	}
}
