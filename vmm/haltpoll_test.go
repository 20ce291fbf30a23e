package vmm

import (
	"strings"
	"testing"
	"time"
)

// TestHaltPolling: polling is bounded by the flag, off at 0, and off
// whenever vCPUs outnumber host CPUs, with the report saying why.
func TestHaltPolling(t *testing.T) {
	for _, c := range []struct {
		max        time.Duration
		cpus, host int
		want       time.Duration
		says       string
	}{
		{200 * time.Microsecond, 2, 2, 200 * time.Microsecond, "up to 200µs"},
		{50 * time.Microsecond, 1, 8, 50 * time.Microsecond, "up to 50µs"},
		{0, 2, 2, 0, "off"},
		{200 * time.Microsecond, 3, 2, 0, "off: 3 vCPUs, 2 host CPUs"},
	} {
		p, says := haltPolling(c.max, c.cpus, c.host)
		if p.Max != c.want || !strings.HasPrefix(says, c.says) {
			t.Errorf("bound %v, %d vCPUs on %d CPUs: polls up to %v (%q), want %v (%q)", c.max, c.cpus, c.host, p.Max, says, c.want, c.says)
		}
		if p.Max > 0 && (p.Grow != 2 || p.GrowStart != 10*time.Microsecond) {
			t.Errorf("policy %+v is not KVM's rule", p)
		}
	}
}
