package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govmm/govmm/guest/internal/procirq"
)

func TestParseArgs(t *testing.T) {
	c, err := parseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.dev != "/dev/vda" || c.n != 1000 || c.depth != 1 || c.rw != "read" || c.bs != 4096 || c.offset != 0 || c.sizeGiven {
		t.Errorf("defaults %+v", c)
	}
	c, err = parseArgs(strings.Fields("-dev /dev/vdb -n 5 -depth 32 -rw both -bs 8192 -offset 1048576 -size 4194304"))
	if err != nil {
		t.Fatal(err)
	}
	if c.dev != "/dev/vdb" || c.n != 5 || c.depth != 32 || c.rw != "both" || c.bs != 8192 || c.offset != 1<<20 || c.size != 4<<20 || !c.writes() {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range []struct{ args, want string }{
		{"-n 0", "-n"},
		{"-depth 0", "-depth"},
		{"-depth 2000", "-depth"},
		{"-rw scribble", "-rw"},
		{"-bs 512", "-bs"},
		{"-bs 6000", "-bs"},
		{"-bs 2097152", "-bs"},
		{"-offset 100", "-offset"},
		{"-offset -4096", "-offset"},
		{"-size 100", "-size"},
		{"-rw write", "scratch region"},
		{"-rw write -size 1048576", "scratch region"},
		{"-rw both -offset 0", "scratch region"},
		{"extra", "unexpected"},
		{"-nosuchflag", "not defined"},
	} {
		if _, err := parseArgs(strings.Fields(bad.args)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want one about %q", bad.args, err, bad.want)
		}
	}
	if _, err := parseArgs(strings.Fields("-rw write -offset 0 -size 4096")); err != nil {
		t.Errorf("writes with an explicit region at 0: %v", err)
	}
}

func TestRegion(t *testing.T) {
	c, _ := parseArgs(strings.Fields("-offset 1048576"))
	if err := c.region(64 << 20); err != nil || c.size != 63<<20 {
		t.Errorf("reads to the end: size %d, err %v", c.size, err)
	}
	if got := c.slots(); got != (63<<20)/4096 {
		t.Errorf("slots %d", got)
	}
	c, _ = parseArgs(strings.Fields("-rw write -bs 8192 -offset 0 -size 16384"))
	if err := c.region(64 << 20); err != nil || c.slots() != 3 {
		t.Errorf("16 KiB region, 8 KiB requests: %d slots (want 3: 0, 4K, 8K), err %v", c.slots(), err)
	}
	c, _ = parseArgs(strings.Fields("-rw write -offset 61440 -size 8192"))
	if err := c.region(65536); err == nil {
		t.Error("a region past the end of the device accepted")
	}
	c, _ = parseArgs(strings.Fields("-offset 65536"))
	if err := c.region(65536); err == nil {
		t.Error("an offset at the end of the device accepted")
	}
}

// TestOffsets: random offsets stay aligned and inside the region.
func TestOffsets(t *testing.T) {
	c, _ := parseArgs(strings.Fields("-rw write -bs 8192 -offset 4096 -size 20480"))
	if err := c.region(1 << 20); err != nil {
		t.Fatal(err)
	}
	for k := range c.slots() {
		off := c.offset + k*align
		if off%align != 0 || off < c.offset || off+c.bs > c.offset+c.size {
			t.Errorf("slot %d: offset %d outside [%d, %d)", k, off, c.offset, c.offset+c.size)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"0\n": {0}, "0-3": {0, 1, 2, 3}, "0-1,4,6-7\n": {0, 1, 4, 6, 7}} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "3-1", "1,", "-2"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestQueueName(t *testing.T) {
	for _, c := range []struct{ desc, virtio, want string }{
		{"PCI-MSIX-0000:00:02.0 1-edge virtio0-req.0", "", "virtio0-req.0"},
		{"PCI-MSIX-0000:00:02.0 1-edge virtio0-req.0", "virtio0", "virtio0-req.0"},
		{"PCI-MSIX-0000:00:02.0 1-edge virtio0-req.0", "virtio1", ""},
		{"IR-PCI-MSIX-0000:00:03.0 12-edge virtio1-req.11", "virtio1", "virtio1-req.11"},
		{"PCI-MSIX-0000:00:02.0 0-edge virtio0-config", "", ""},
		{"PCI-MSIX-0000:00:03.0 1-edge virtio1-virtqueues", "", ""},
		{"IR-IO-APIC 4-edge ttyS0", "", ""},
		{"", "", ""},
	} {
		if got := queueName(c.desc, c.virtio); got != c.want {
			t.Errorf("queueName(%q, %q) = %q, want %q", c.desc, c.virtio, got, c.want)
		}
	}
}

const before = `           CPU0       CPU1
  4:        120          0  IR-IO-APIC    4-edge      ttyS0
 24:          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config
 25:         17          0  PCI-MSIX-0000:00:02.0   1-edge      virtio0-req.0
 26:          0         23  PCI-MSIX-0000:00:02.0   2-edge      virtio0-req.1
 28:          9          9  PCI-MSIX-0000:00:03.0   1-edge      virtio1-req.0
LOC:       5012       4990   Local timer interrupts
`

const after = `           CPU0       CPU1
  4:        130          0  IR-IO-APIC    4-edge      ttyS0
 24:          1          0  PCI-MSIX-0000:00:02.0   0-edge      virtio0-config
 25:       1017          2  PCI-MSIX-0000:00:02.0   1-edge      virtio0-req.0
 26:          0       1023  PCI-MSIX-0000:00:02.0   2-edge      virtio0-req.1
 28:         19          9  PCI-MSIX-0000:00:03.0   1-edge      virtio1-req.0
LOC:       5112       5090   Local timer interrupts
`

func diff(t *testing.T) *procirq.Table {
	b, err := procirq.Parse(before)
	if err != nil {
		t.Fatal(err)
	}
	a, err := procirq.Parse(after)
	if err != nil {
		t.Fatal(err)
	}
	d, err := procirq.Diff(b, a)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReport(t *testing.T) {
	c, err := parseArgs(strings.Fields("-n 500 -depth 1 -rw both -offset 1048576 -size 4194304"))
	if err != nil {
		t.Fatal(err)
	}
	r := &result{cfg: c, cpus: 2, reads: 1000, writes: 1000, elapsed: 2 * time.Second,
		marks: &markCounts{exits: 3000, delivered: 10, sent: 12, irqExits: 2100}, irqs: diff(t), virtio: "virtio0"}
	want := `blkbench: dev /dev/vda rw both bs 4096 depth 1 cpus 2 threads 2 offset 1048576 size 4194304
blkbench: requests 2000
blkbench: reads 1000
blkbench: writes 1000
blkbench: seconds 2.000
blkbench: iops 1000
blkbench: exits 3000
blkbench: exits/io 1.500
blkbench: ipis-delivered 10
blkbench: ipis-sent 12
blkbench: irq-exits 2100
blkbench: irq-exits/io 1.050
blkbench: interrupts 2002
blkbench: interrupts/io 1.001
blkbench: cpu 0 interrupts 1000
blkbench: cpu 0 irq 25 virtio0-req.0 1000
blkbench: cpu 0 other irq 4 ttyS0 10
blkbench: cpu 0 other irq 24 virtio0-config 1
blkbench: cpu 0 other irq 28 virtio1-req.0 10
blkbench: cpu 1 interrupts 1002
blkbench: cpu 1 irq 25 virtio0-req.0 2
blkbench: cpu 1 irq 26 virtio0-req.1 1000
`
	if got := report(r); got != want {
		t.Errorf("report:\n%s\nwant:\n%s", got, want)
	}

	// Without the accounting port, and without knowing the virtio device
	// (every virtio block queue counts), on a CPU that took none.
	r.marks, r.virtio = nil, ""
	got := report(r)
	for _, line := range []string{
		"blkbench: exits n/a\n",
		"blkbench: interrupts 2012\n",
		"blkbench: cpu 0 irq 28 virtio1-req.0 10\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("report without marker lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "exits/io") || strings.Contains(got, "ipis-") {
		t.Errorf("report without marker has marker lines:\n%s", got)
	}
}
