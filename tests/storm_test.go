package tests

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/govmm/govmm/accounting"
	"github.com/govmm/govmm/exitcause"
	"github.com/govmm/govmm/vlapic"
	"github.com/govmm/govmm/vmm"
)

// stormMode is one way storm.elf sends: its mode= and what govmm must
// count its sends as.
type stormMode struct {
	name  string // subtest name
	mode  string // storm.elf mode=
	x2    bool   // x2APIC CPUs
	pveoi bool   // KVM's PV EOI, served by govmm
	kind  accounting.IPIKind
}

var stormModes = []stormMode{
	{"xapic-phys", "xapic-phys", false, false, accounting.IPIXAPICPhysical},
	{"xapic-cluster", "xapic-cluster", false, false, accounting.IPIXAPICLogical},
	{"x2apic-phys", "x2apic-phys", true, false, accounting.IPIX2APICPhysical},
	{"x2apic-cluster", "x2apic-cluster", true, false, accounting.IPIX2APICLogical},
	{"pv", "pv", true, false, accounting.IPIParavirt},
	{"pv+pveoi", "pv", true, true, accounting.IPIParavirt},
}

// stormDelivery is how govmm delivers interrupts to the vCPUs. Only
// govmm's own user-space path exists today; a hardware-assisted one (AVIC)
// is another entry whose edit turns it on in the configuration, e.g.
// {"avic", func(c *vmm.Config) { c.AVIC = true }}: every mode runs on every
// delivery, with the same exactness checks.
type stormDelivery struct {
	name string
	edit func(*vmm.Config)
}

var stormDeliveries = []stormDelivery{{"plain", nil}, {"avic", func(c *vmm.Config) { c.AVIC = true }}}

// Deliveries per run. A million per mode takes 2-5 minutes per mode on the
// 2-core development host (~3,000-7,000 IPIs/s, see guest/baremetal/
// README.md), so the test sends fewer and 'make storm' sends the million
// (GOVMM_STORM_COUNT).
const (
	stormCount4  = 100000 // 4 vCPUs
	stormCount64 = 10000  // 64 vCPUs
)

var stormLine = regexp.MustCompile(`# storm mode=\S+ cpus=(\d+) receivers=\d+ count=(\d+) sent=(\d+) received=(\d+) icr_writes=(\d+) multicasts=(\d+) halts=(\d+)`)

// TestStorm runs storm.elf: every CPU sends IPIs to the others at once
// (unicasts to changing targets and multicasts, receivers halting and
// spinning), with no IPI coalesced by design. The guest checks that every
// IPI arrived exactly once; here govmm's accounting of the storm (section
// 1) must agree with the guest exactly:
//   - IPIDelivered (targets reached) = the deliveries the guest's handlers
//     counted, all of the mode's kind; IPISent = the guest's ICR writes or
//     PV traps;
//   - one injection per delivery, and one EOI per delivery (an EOI exit, or
//     a PV EOI with pveoi);
//   - the run finishes: a lost IPI or kick would stall the guest (its
//     watchdog fails it) or hang a halted receiver (the run times out).
//
// GOVMM_STORM_COUNT=N runs only the 4-vCPU storms with N deliveries each
// ('make storm': a million); GOVMM_STORM_CPUS=C makes them C-vCPU storms
// (up to 1024: 128 CPUs send, all receive; above 255 vCPUs only the x2APIC
// and PV modes, as xAPIC IDs end at 255).
func TestStorm(t *testing.T) {
	sizes := []struct{ cpus, count int }{{4, stormCount4}, {64, stormCount64}}
	timeout := 5 * time.Minute
	if s := os.Getenv("GOVMM_STORM_COUNT"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("GOVMM_STORM_COUNT=%q: want a positive count", s)
		}
		// Up to ~300 s per 100,000 IPIs in the nested AMD-V host under
		// load (CI, 2026-12-04): 5 minutes per 100,000, at least 30.
		sizes, timeout = sizes[:1], max(30*time.Minute, time.Duration(n/100000+1)*5*time.Minute)
		sizes[0].count = n
	}
	if s := os.Getenv("GOVMM_STORM_CPUS"); s != "" {
		c, err := strconv.Atoi(s)
		if err != nil || c < 2 || c > 1024 {
			t.Fatalf("GOVMM_STORM_CPUS=%q: want 2 to 1024 vCPUs (storm.elf's most)", s)
		}
		sizes = sizes[:1]
		sizes[0].cpus = c
	}
	ran := 0
	for _, d := range stormDeliveries {
		for _, m := range stormModes {
			for _, sz := range sizes {
				if sz.cpus > 255 && !m.x2 {
					continue // xAPIC IDs are 8 bits: govmm refuses the VM
				}
				name := fmt.Sprintf("%s/%s/%d", d.name, m.name, sz.cpus)
				t.Run(name, func(t *testing.T) {
					ran++
					runStorm(t, d, m, sz.cpus, sz.count, timeout)
				})
			}
		}
	}
	// -run 'TestStorm/...' that names no storm would pass with nothing
	// run ('make storm STORM_RUN=...' with a typo in it did).
	if ran == 0 {
		t.Fatalf("no storm matches -run: the storms are TestStorm/{plain,avic}/{xapic-phys,xapic-cluster,x2apic-phys,x2apic-cluster,pv,pv+pveoi}/%d", sizes[0].cpus)
	}
}

func runStorm(t *testing.T, d stormDelivery, m stormMode, cpus, count int, timeout time.Duration) {
	cmd := fmt.Sprintf("mode=%s count=%d", m.mode, count)
	if m.pveoi {
		cmd += " pveoi=1"
	}
	edit := func(c *vmm.Config) {
		c.PVEOI = m.pveoi
		if d.edit != nil {
			d.edit(c)
		}
	}
	start := time.Now()
	g := runGuestFor(t, "storm.elf", cpus, m.x2, cmd, edit, timeout)
	wall := time.Since(start)

	f := stormLine.FindStringSubmatch(g.Console)
	if f == nil {
		t.Fatalf("no '# storm' summary line on the console:\n%s", g.Console)
	}
	num := func(i int) uint64 { v, _ := strconv.ParseUint(f[i], 10, 64); return v }
	received, icrs := num(4), num(5)
	if num(1) != uint64(cpus) || num(2) != uint64(count) || num(3) != uint64(count) || received != uint64(count) {
		t.Fatalf("guest summary %q: want cpus=%d count=sent=received=%d", f[0], cpus, count)
	}
	checkKVMAgrees(t, g)

	s := g.section(t, 1)
	tot := s.Total
	var sent, delivered uint64
	for k := accounting.IPIKind(0); k < accounting.NumIPIKinds; k++ {
		ks, kd := tot.IPISent[k.String()], tot.IPIDelivered[k.String()]
		sent, delivered = sent+ks, delivered+kd
		if k != m.kind && (ks != 0 || kd != 0) {
			t.Errorf("section 1: %d %s IPIs sent (%d deliveries): the storm sends only %s", ks, k, kd, m.kind)
		}
	}
	if delivered != received {
		t.Errorf("govmm counted %d IPI deliveries, the guest received %d", delivered, received)
	}
	if sent != icrs {
		t.Errorf("govmm counted %d IPI sends, the guest made %d ICR writes / PV traps", sent, icrs)
	}
	if tot.Injected != received {
		t.Errorf("govmm injected %d interrupts for %d received IPIs", tot.Injected, received)
	}
	eoi := exits(tot, exitcause.APIC(m.x2, true, uint16(vlapic.RegEOI)))
	if eoi+tot.PVEOIs != received {
		t.Errorf("%d EOI exits + %d PV EOIs, want %d (one per IPI)", eoi, tot.PVEOIs, received)
	}
	if !m.pveoi && tot.PVEOIs != 0 {
		t.Errorf("%d PV EOIs without pveoi", tot.PVEOIs)
	}
	kicks, hlts := exits(tot, exitcause.Kick), exits(tot, exitcause.HLT)
	if kicks == 0 || hlts == 0 {
		t.Errorf("the storm reached %d running receivers (kicks) and %d halted ones (HLT exits): want both", kicks, hlts)
	}
	t.Logf("%d IPIs (%d sends) on %d vCPUs in %v: %.0f IPIs/s; section: %d exits, %d kicks, %d HLT, %d irq-window, %d EOI exits, %d PV EOIs",
		received, icrs, cpus, wall.Round(time.Millisecond), float64(received)/wall.Seconds(),
		tot.Exits, kicks, hlts, exits(tot, exitcause.IRQWindow), eoi, tot.PVEOIs)
}
