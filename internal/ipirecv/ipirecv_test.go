package ipirecv

import (
	"strings"
	"testing"
)

// TestParse reads the receivers' lines of a console (runs, a single ID,
// no AP at all) and refuses lines that do not say exactly one count per
// AP and field.
func TestParse(t *testing.T) {
	console := "ok 5 cpus up\n" +
		"# section 1 unicast: icr_sends=8 bsp_apic=8 member_aps=4 apic_each=2 other_aps=0 apic_each=0\n" +
		"# section 1 unicast: receivers hlts=1-3:2,4:1 wakes=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2 nmis=1-4:0\r\n" +
		"# section 5 nmi: receivers hlts=1-4:0 wakes=1-4:0 irqs=1-4:0 eois=1-4:0 pv_eois=1-4:0 nmis=1-3:1,4:0\n" +
		"# section 2 multicast: receivers hlts=none wakes=none irqs=none eois=none pv_eois=none nmis=none\n"
	secs, err := Parse(console)
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 3 || len(secs[1]) != 4 || len(secs[5]) != 4 || len(secs[2]) != 0 {
		t.Fatalf("sections %v", secs)
	}
	if c := secs[1][4]; c != (Counts{HLTs: 1, Wakes: 2, IRQs: 2, PVEOIs: 2}) {
		t.Errorf("section 1 APIC ID 4: %+v", c)
	}
	if c := secs[1].Sum(); c != (Counts{HLTs: 7, Wakes: 8, IRQs: 8, PVEOIs: 8}) {
		t.Errorf("section 1 sum: %+v", c)
	}
	if c := secs[5].Sum(); c != (Counts{NMIs: 3}) {
		t.Errorf("section 5 sum: %+v", c)
	}
	for _, bad := range []string{
		"hlts=2-4:2 wakes=2-4:2 irqs=2-4:2 eois=2-4:0 pv_eois=2-4:2 nmis=2-4:0",   // not from APIC ID 1
		"hlts=1:2,3:2 wakes=1-3:2 irqs=1-3:2 eois=1-3:0 pv_eois=1-3:2 nmis=1-3:0", // a gap
		"hlts=1-3:2 wakes=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2 nmis=1-4:0",   // fewer APs
		"hlts=1-4:1.5 wakes=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2 nmis=1-4:0", // not a count
		"wakes=1-4:2 hlts=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2 nmis=1-4:0",   // out of order
		"hlts=1-4:2 wakes=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2",              // a count missing
		"hlts=1-4 wakes=1-4:2 irqs=1-4:2 eois=1-4:0 pv_eois=1-4:2 nmis=1-4:0",     // no value
	} {
		if _, err := Parse("# section 1 unicast: receivers " + bad + "\n"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	line := "# section 1 unicast: receivers hlts=none wakes=none irqs=none eois=none pv_eois=none nmis=none\n"
	if _, err := Parse(strings.Repeat(line, 2)); err == nil {
		t.Error("two lines for one section: no error")
	}
}
