package accounting

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync/atomic"
)

// DeviceIRQs counts one PCI device's message-signalled interrupts, per
// vector (MSI-X table entry) and per destination CPU: what a virtio-blk
// queue's interrupts cost and where Linux's managed affinity sent them.
// Created while the VM is built (NewDeviceIRQs); from then on any thread
// (device goroutines, vCPU threads unmasking a vector) counts into it
// with plain atomics.
type DeviceIRQs struct {
	Name    string   // what the device is ("virtio-blk")
	Address string   // its PCI address ("00:02.0")
	Labels  []string // per vector, what it serves ("config", "queue 0"); may be shorter
	cpus    int
	// delivered[v*cpus+cpu]: messages of vector v that cpu's LAPIC accepted.
	delivered []atomic.Uint64
	// refused[v]: messages of vector v the remapping unit blocked or no
	// LAPIC accepted (a remapping fault, a disabled APIC).
	refused []atomic.Uint64
	// Held, if set, returns what the device's MSI-X logic counted for
	// vector v without a delivery: messages held pending while the vector
	// or function was masked, and messages dropped because MSI-X was off
	// (the PCI side keeps those counts; read only when reporting).
	Held func(v int) (pended, dropped uint64)
	// Queues, if set, returns the device's virtqueue counters (read only
	// when reporting): notifications, completions, and the interrupts the
	// driver's event index suppressed, which the vector counts cannot show.
	Queues func() []QueueReport
}

// QueueReport is one virtqueue's counters as reported.
type QueueReport struct {
	Queue      int    `json:"queue"`
	Label      string `json:"label,omitempty"`
	Kicks      uint64 `json:"kicks"`      // driver notifications
	Completed  uint64 `json:"completed"`  // chains put on the used ring
	Interrupts uint64 `json:"interrupts"` // interrupts the queue sent
	Suppressed uint64 `json:"suppressed"` // interrupts the event index (or NO_INTERRUPT) coalesced away
	BadChains  uint64 `json:"bad_chains,omitempty"`
}

// NewDeviceIRQs returns counters for a device with vectors vectors on a
// VM of cpus vCPUs.
func NewDeviceIRQs(name, addr string, vectors, cpus int) *DeviceIRQs {
	return &DeviceIRQs{Name: name, Address: addr, cpus: cpus,
		delivered: make([]atomic.Uint64, vectors*cpus), refused: make([]atomic.Uint64, vectors)}
}

// Vectors is the number of vectors counted.
func (d *DeviceIRQs) Vectors() int { return len(d.refused) }

// Delivered counts one message of vector v accepted by cpu. Out-of-range
// arguments are ignored (counting never fails a delivery).
func (d *DeviceIRQs) Delivered(v, cpu int) {
	if v >= 0 && v < len(d.refused) && cpu >= 0 && cpu < d.cpus {
		d.delivered[v*d.cpus+cpu].Add(1)
	}
}

// Refused counts one message of vector v that reached no CPU.
func (d *DeviceIRQs) Refused(v int) {
	if v >= 0 && v < len(d.refused) {
		d.refused[v].Add(1)
	}
}

// DeviceReport is one device's interrupts as reported (JSON, table,
// dashboard, metrics). Vectors that never signalled are left out.
type DeviceReport struct {
	Name    string         `json:"name"`
	Address string         `json:"address"`
	Vectors []VectorReport `json:"vectors"`
	Queues  []QueueReport  `json:"queues,omitempty"`
}

// VectorReport is one vector's counts.
type VectorReport struct {
	Vector    int      `json:"vector"`
	Label     string   `json:"label,omitempty"`
	Delivered uint64   `json:"delivered"`
	ByCPU     []uint64 `json:"by_cpu"`
	Pended    uint64   `json:"pended,omitempty"`
	Dropped   uint64   `json:"dropped,omitempty"`
	Refused   uint64   `json:"refused,omitempty"`
}

// Report copies the counters.
func (d *DeviceIRQs) Report() DeviceReport {
	r := DeviceReport{Name: d.Name, Address: d.Address, Vectors: []VectorReport{}}
	for v := range d.refused {
		vr := VectorReport{Vector: v, ByCPU: make([]uint64, d.cpus), Refused: d.refused[v].Load()}
		if v < len(d.Labels) {
			vr.Label = d.Labels[v]
		}
		for c := range d.cpus {
			vr.ByCPU[c] = d.delivered[v*d.cpus+c].Load()
			vr.Delivered += vr.ByCPU[c]
		}
		if d.Held != nil {
			vr.Pended, vr.Dropped = d.Held(v)
		}
		if vr.Delivered+vr.Pended+vr.Dropped+vr.Refused != 0 {
			r.Vectors = append(r.Vectors, vr)
		}
	}
	if d.Queues != nil {
		for _, q := range d.Queues() {
			if q.Kicks+q.Completed+q.Interrupts+q.Suppressed+q.BadChains != 0 {
				r.Queues = append(r.Queues, q)
			}
		}
	}
	return r
}

// Total is the messages of every vector that reached a CPU.
func (r DeviceReport) Total() uint64 {
	var n uint64
	for _, v := range r.Vectors {
		n += v.Delivered
	}
	return n
}

// DeviceTotal is the messages of every device vector that reached a CPU.
func (r Report) DeviceTotal() uint64 {
	var n uint64
	for _, d := range r.Devices {
		n += d.Total()
	}
	return n
}

// WriteDeviceTable prints one line per device vector that signalled: the
// device, its address, the vector and its label, then deliveries per CPU
// and what was held or refused.
func WriteDeviceTable(w io.Writer, devs []DeviceReport) {
	if len(devs) == 0 {
		return
	}
	devs = append([]DeviceReport(nil), devs...)
	sort.SliceStable(devs, func(i, j int) bool { return devs[i].Address < devs[j].Address })
	fmt.Fprintln(w, "device interrupts (MSI-X), per vector and destination CPU:")
	for _, d := range devs {
		if len(d.Vectors) == 0 {
			fmt.Fprintf(w, "  %s %-12s no interrupts\n", d.Address, d.Name)
		}
		for _, v := range d.Vectors {
			var b strings.Builder
			for c, n := range v.ByCPU {
				if n != 0 {
					fmt.Fprintf(&b, " cpu%d=%d", c, n)
				}
			}
			extra := ""
			if v.Pended+v.Dropped+v.Refused != 0 {
				extra = fmt.Sprintf("  (pended %d, dropped %d, refused %d)", v.Pended, v.Dropped, v.Refused)
			}
			fmt.Fprintf(w, "  %s %-12s vector %-2d %-10s %8d:%s%s\n", d.Address, d.Name, v.Vector, v.Label, v.Delivered, b.String(), extra)
		}
		for _, q := range d.Queues {
			bad := ""
			if q.BadChains != 0 {
				bad = fmt.Sprintf(", %d bad chains", q.BadChains)
			}
			fmt.Fprintf(w, "  %s %-12s queue  %-2d %-10s %d kicks, %d completed, %d interrupts, %d suppressed by the event index%s\n",
				d.Address, d.Name, q.Queue, q.Label, q.Kicks, q.Completed, q.Interrupts, q.Suppressed, bad)
		}
	}
}
