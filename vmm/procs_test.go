package vmm

import "testing"

// TestProcsFor: a P per vCPU and two more, never fewer than the process
// has, and the user's GOMAXPROCS left alone.
func TestProcsFor(t *testing.T) {
	for _, c := range []struct {
		cpus, now int
		env       string
		want      int
	}{
		{4, 2, "", 6},
		{1024, 2, "", 1026},
		{1, 8, "", 8},
		{4, 6, "", 6},
		{64, 2, "2", 2},
		{64, 16, "16", 16},
	} {
		if got := procsFor(c.cpus, c.now, c.env); got != c.want {
			t.Errorf("procsFor(%d vCPUs, GOMAXPROCS %d, env %q) = %d, want %d", c.cpus, c.now, c.env, got, c.want)
		}
	}
}
